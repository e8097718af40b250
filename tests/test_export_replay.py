"""The predictor's recipes make every table, text and frozen-image family's test predictions again,
from the test rows alone, in any order: each family fitted on real rows (titanic, house prices, spooky,
drawn shapes),
its replay run on the test maps as a predictor reads them, and compared with what the solve
itself predicted."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from solve_pipeline.race.bagging import Bag, add_repeat
from solve_pipeline.race.calibration import calibrate_run
from solve_pipeline.base.cv import finish_run, start_run
from solve_pipeline.export.predictor import Predictor
from solve_pipeline.export.saved import PICTURES_TOLERANCE, _pictures_made_at_setup
from solve_pipeline.images.image_features import PictureFiles
from solve_pipeline.race.registry import family_candidate
from solve_pipeline.inputs.solve_inputs import SolveOptions, prepare
from solve_pipeline.base.table_inputs import Rows
from solve_pipeline.inputs.validation import RANDOM
from solver_workspaces import house_workspace, shapes_workspace, spooky_workspace, titanic_workspace, tweets_workspace

TABLE_FAMILIES = ["linear", "linear_power", "lightgbm", "catboost", "extratrees", "random_forest"]
TEXT_FAMILIES = ["linear", "lightgbm", "naive_bayes", "complement_nb", "nbsvm", "linear_chars"]


pytestmark = pytest.mark.integration


@pytest.mark.parametrize("make,families", [(titanic_workspace, TABLE_FAMILIES), (house_workspace, TABLE_FAMILIES[:3]),
                                           (lambda root: tweets_workspace(root, n=400), TEXT_FAMILIES),
                                           (spooky_workspace, ["naive_bayes", "linear_chars"])],
                         ids=["binary", "regression", "text", "text-multiclass"])
def test_each_family_replays_its_test_predictions_on_shuffled_rows(tmp_path: Path, make, families: list[str],
                                                                   monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    workspace = make(tmp_path / "ws")
    artifacts, ctx, _, _ = prepare(SolveOptions(workspace=workspace, folds=2, seed=0))
    assert ctx.keep_models
    features = ctx.features
    frames = artifacts.test_maps
    shuffled = {code: frame.sample(frac=1.0, random_state=1) for code, frame in frames.items()}
    ids = list(features.test_ids)
    order = np.random.default_rng(0).permutation(len(ids))[: len(ids) // 2]
    for name in families:
        run = start_run(family_candidate(name), ctx)
        assert run is not None and finish_run(run, ctx, None)
        calibrate_run(run, ctx)
        replays = {t: run.target_replay(t) for t in run.test}
        assert all(r is not None for r in replays.values()), name
        predictor = Predictor(targets=list(ctx.targets), replays=replays,  # type: ignore[arg-type]
                              decoders=dict.fromkeys(replays), models=dict.fromkeys(replays, name),
                              table=features.table, text=features.text_recipe, tab_names=list(features.tab_names),
                              maps=list(frames))
        # Through a pickle, as the predictor travels; no training row goes with it.
        again = pickle.loads(pickle.dumps(predictor))
        whole = again.predictions(frames, ids)
        part = again.predictions(shuffled, [ids[i] for i in order])
        for target, test in run.test.items():
            assert np.allclose(whole[target].test, test, rtol=0, atol=1e-9), name
            assert np.allclose(part[target].test, test[order], rtol=0, atol=1e-9), name


def test_a_bag_replays_the_mean_of_its_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    workspace = titanic_workspace(tmp_path / "ws")
    _, ctx, _, _ = prepare(SolveOptions(workspace=workspace, folds=2, seed=0))
    base = start_run(family_candidate("linear"), ctx)
    assert base is not None and finish_run(base, ctx, None)
    bag = Bag(base, base_honest=True)
    assert add_repeat(bag, ctx, lambda seed: RANDOM.folds(ctx.features.n_train, 2, seed, None), float("inf"))
    combined = bag.combined()
    assert combined is not None
    for target, test in combined.test.items():
        replay = combined.target_replay(target)
        assert replay is not None
        assert np.allclose(replay.test(Rows(ctx.features.tab_test)), test, rtol=0, atol=1e-9)


def test_the_picture_families_replay_on_pictures_they_read_again(tmp_path: Path, monkeypatch) -> None:
    """Frozen EfficientNet-Lite embeddings (pooled, and with the ImageNet head): the replay embeds
    the test pictures again by the kept network, its weights in the pickle, and the heads come out
    as the run's to float32's noise, in any order; the pixel families' grids exactly; a table beside
    the pictures by its own fitted maps. An unreadable picture gets the run's mean vector."""
    monkeypatch.chdir(tmp_path)
    workspace = shapes_workspace(tmp_path / "ws", with_table=True)
    artifacts, ctx, _, _ = prepare(SolveOptions(workspace=workspace, folds=2, seed=0))
    features = ctx.features
    assert features.table is not None and features.tab_names and features.image_paths_test
    frames = artifacts.test_maps
    shuffled = {code: frame.sample(frac=1.0, random_state=1) for code, frame in frames.items()}
    ids = list(features.test_ids)
    order = np.random.default_rng(0).permutation(len(ids))[: len(ids) // 2]
    for name in ("pretrained_head", "pretrained_linear", "linear", "lightgbm"):
        run = start_run(family_candidate(name), ctx)
        assert run is not None and finish_run(run, ctx, None)
        replays = {t: run.target_replay(t) for t in run.test}
        assert all(r is not None for r in replays.values()), name
        predictor = Predictor(targets=list(ctx.targets), replays=replays,  # type: ignore[arg-type]
                              decoders=dict.fromkeys(replays), models=dict.fromkeys(replays, name),
                              table=features.table, text=features.text_recipe, tab_names=list(features.tab_names),
                              maps=list(frames), pictures=PictureFiles(tuple(features.image_paths_test or {}),
                                                                       features.image_shape[1]))
        blob = pickle.dumps(predictor)
        embedded = name.startswith("pretrained")
        assert (len(blob) > 5e6) == embedded, "the network's weights travel with the predictor that embeds"
        tolerance = PICTURES_TOLERANCE if embedded else 1e-9
        again = pickle.loads(blob)
        if embedded:
            blob_of_embedding = blob
        whole = again.predictions(frames, ids, artifacts.setup_dir)
        part = again.predictions(shuffled, [ids[i] for i in order], artifacts.setup_dir)
        for target, test in run.test.items():
            print(f"{name}: replayed within {np.abs(whole[target].test - test).max():.2g}")  # -s shows it
            assert np.abs(whole[target].test - test).max() <= tolerance, name
            assert np.abs(part[target].test - test[order]).max() <= tolerance, name
    # A picture that is gone: the run's mean vector, not a failure.
    gone = frames["img"].copy()
    gone.iloc[0, 1] = "../raw/data/images/no-such-picture.png"
    predicted = pickle.loads(blob_of_embedding).predictions({**frames, "img": gone}, ids[:3], artifacts.setup_dir)
    assert all(np.isfinite(p.test).all() for p in predicted.values())


def test_pictures_unpacked_at_setup_or_missing_are_refused(tmp_path: Path) -> None:
    """Pictures unpacked from stacked arrays into setup/ are named by the test-map code, never made
    by it: such a predictor is refused at the solve. At predict time, a map whose pictures are
    mostly not there is refused in one line rather than predicted as blank pictures."""
    setup = tmp_path / "setup"
    (setup / "pictures").mkdir(parents=True)
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "a.png").write_bytes(b"")
    unpacked = {"image_path": [str(setup / "pictures" / "0.npy")]}
    assert _pictures_made_at_setup(unpacked, setup) == "pictures/0.npy"
    assert _pictures_made_at_setup({"image_path": [str(setup / "../raw/a.png"), ""]}, setup) is None
    frame = pd.DataFrame({"image_path": ["../raw/a.png", "../raw/b.png", "../raw/c.png"]}, index=["1", "2", "3"])
    with pytest.raises(ValueError, match="2 of the 3 pictures"):
        PictureFiles(("image_path",)).paths(frame, setup)
    assert PictureFiles(("image_path",)).paths(frame.iloc[:2], setup)["image_path"][0].endswith("a.png")
