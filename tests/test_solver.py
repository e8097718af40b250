"""Solver runs on hand-built setup workspaces made from real competition data (see solver_workspaces)."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from solver_workspaces import (
    ACCURACY_METRIC,
    COMPETITIONS,
    LABEL_FORMAT,
    check_solved,
    house_workspace,
    run_solver,
    shapes_workspace,
    spooky_workspace,
    titanic_workspace,
    write_workspace,
)

from solve_pipeline.base.baseline_models import LightGBMModel, LinearModel, ModelOptions
from solve_pipeline.base.folds import make_folds
from solve_pipeline.networks.batches import first_batch
from solve_pipeline.base.dataset import CATEGORY, DATE_PART
from solve_pipeline.inputs.features import build_features
from solve_pipeline.phases.outputs import ranked_candidates
from solve_pipeline.race.registry import BY_NAME
from solve_pipeline.base.setup_modules import SetupArtifacts, TargetSpec, load_setup_module
from solve_pipeline.base.submission_check import validate_submission

# Only the tests of a full solve's phases run alone (`solo`): their tuning trials and blends depend on
# the CPU the budget buys. The others assert what the race's pace-setter alone guarantees.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def titanic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return titanic_workspace(tmp_path_factory.mktemp("titanic"))


def test_titanic_light(titanic: Path, tmp_path: Path) -> None:
    out = tmp_path / "light.csv"
    result, events = run_solver(titanic, "--light", "--out", str(out))
    assert validate_submission(out, sample_path=titanic / "raw/data/sample_submission.csv") == []
    assert result["folds"] == 2 and result["n_train"] == 600 and result["n_train_total"] == 713
    assert result["higher_is_better"] is True
    assert result["validation_score"] > 0.70 > result["cv"]["constant"]
    fold_events = [e for e in events if e["event"] == "fold"]
    assert {e["model"] for e in fold_events} >= {"constant", "linear", "lightgbm"}
    assert all(e["score"] is None or 0 <= e["score"] <= 1 for e in fold_events)
    assert result["candidates"] == []  # the meta check's light solve leaves the real submissions alone


@pytest.fixture(scope="module")
def titanic_solved(titanic: Path) -> tuple[Path, dict, list[dict]]:
    """One full solve (race, tuning, revive, blend) shared by the tests that read its outputs."""
    result, events = run_solver(titanic, "--folds", "3", "--seed", "1", "--time-budget", "30")
    return titanic, result, events


@pytest.mark.solo
def test_titanic_normal(titanic_solved: tuple[Path, dict, list[dict]]) -> None:
    titanic, result, events = titanic_solved
    check_solved(titanic, result, events)
    assert result["folds"] == 3 and result["n_train"] == 713 and result["n_test"] == 178
    assert result["validation_score"] > 0.78
    assert result["cv"]["constant"] < 0.65
    decoding = result["decoding"]["Survived"]
    assert decoding["decoder"]["kind"] in {"argmax", "threshold"}  # two classes: never cut points
    if decoding["decoder"]["kind"] == "threshold":
        assert result["model"].endswith("_threshold") and decoding["score"] > decoding["argmax_score"]
    submission = pd.read_csv(titanic / "submissions" / "submission.csv")
    assert set(submission["Survived"]) <= {0, 1} and submission["Survived"].nunique() == 2
    oof = pd.read_csv(titanic / "solve" / "predictions" / f"{result['model']}_oof.csv")
    assert list(oof.columns) == ["id", "Survived", "Survived__proba__0", "Survived__proba__1"]
    assert np.allclose(oof[["Survived__proba__0", "Survived__proba__1"]].sum(axis=1), 1.0)


@pytest.mark.solo
def test_titanic_candidates_best_first(titanic_solved: tuple[Path, dict, list[dict]]) -> None:
    titanic, result, _ = titanic_solved
    ranked = result["candidates"]
    assert {c["model"] for c in ranked} == set(result["cv"])
    assert [c["validation_score"] for c in ranked] == sorted(result["cv"].values(), reverse=True)
    # The best CV is submitted unless the choice rule put a candidate within noise in its place.
    choice = result["choice"]
    assert result["model"].startswith(choice["chosen"])
    if choice["rule"] == "max_cv":
        assert ranked[0]["model"] == result["model"]
    sample = titanic / "raw/data/sample_submission.csv"
    for candidate in ranked:
        path = titanic / candidate["path"]
        assert path == titanic / "submissions" / "candidates" / f"{candidate['model']}.csv"
        assert validate_submission(path, sample_path=sample) == []
    # The submitted candidate went through the same formatter as the final submission: same bytes.
    submitted = titanic / "submissions" / "candidates" / f"{result['model']}.csv"
    assert submitted.read_bytes() == (titanic / "submissions" / "submission.csv").read_bytes()


@pytest.mark.solo
def test_race_halves_then_finishes_survivors(titanic_solved: tuple[Path, dict, list[dict]]) -> None:
    titanic, result, events = titanic_solved
    race = {e["family"]: e for e in result["race"]}
    assert {"linear", "lightgbm", "catboost", "extratrees", "random_forest"} <= set(race)
    pruned = [e for e in events if e["event"] == "pruned"]
    # The pace-setter (linear, listed first) finishes at once; of the others, the better half (at
    # least two) survive their first fold and the rest are pruned.
    assert race["linear"]["status"] == "finished"
    rung = len(race) - 1
    assert len(pruned) == rung - max(2, math.ceil(rung / 2))
    for event in pruned:
        # A pruned family's first fold was no better than any survivor's.
        survivors = [e["first_fold_score"] for e in result["race"]
                     if e["family"] not in {p["model"] for p in pruned} | {"linear"}]
        assert event["first_fold_score"] <= min(s for s in survivors if s is not None)
    # The first submission is the constant's, written before any other family fitted a fold.
    first_submission = next(i for i, e in enumerate(events) if e["event"] == "submission")
    first_family_fold = next(i for i, e in enumerate(events) if e["event"] == "fold" and e["model"] != "constant")
    assert events[first_submission]["model"] == "constant" and first_submission < first_family_fold
    finished = [name for name, e in race.items() if e["status"] == "finished"]
    assert len(finished) >= 3
    for name in finished:
        # Every finished family keeps OOF and test predictions for blending.
        assert (titanic / "solve" / "predictions" / f"{name}_oof.csv").is_file()
        assert (titanic / "solve" / "predictions" / f"{name}_test.csv").is_file()
        assert result["cv"][name] is not None


@pytest.mark.solo
def test_tuning_records_every_trial(titanic_solved: tuple[Path, dict, list[dict]]) -> None:
    _, result, events = titanic_solved
    tuning = result["tuning"]
    # The race's leader among the families with a search space (a boosting family on most seeds,
    # the power-transformed linear model on some): it raced, and the registry can tune it.
    assert tuning["family"] in result["cv"] and BY_NAME[tuning["family"]].space
    trials = tuning["trials"]
    # The race's default-parameter result is HEBO's first observation, then its own suggestions.
    assert trials[0]["score"] == pytest.approx(tuning["base_score"])
    assert len(trials) >= 1 + 4 and len(trials) - 1 <= tuning["planned_trials"]
    assert all(set(t) >= {"params", "score", "seconds", "error"} for t in trials)
    assert len({json.dumps(t["params"], sort_keys=True) for t in trials}) == len(trials)
    # Later rounds may tune other families; this family's own trials are its events.
    assert len([e for e in events if e["event"] == "trial" and e["model"] == tuning["family"]]) == len(trials) - 1
    tuned = f"{tuning['family']}_tuned"
    best_trial = max(t["score"] for t in trials if t["score"] is not None)
    if tuning["improved"]:
        # Adopted on a corrected score, never on the folds that chose it: refitted on a fresh
        # partition (a bag named after it), or its gain over the defaults shrunk; both are recorded.
        assert tuning["raw_score"] == pytest.approx(best_trial) and best_trial > tuning["base_score"]
        corrected = tuning["corrected_score"]
        named = [m for m in result["cv"] if m == tuned or m.startswith(f"{tuned}_bag")]
        assert named and any(result["cv"][m] == pytest.approx(corrected) for m in named)
        if tuning["corrected_by"].startswith("no time"):
            assert corrected == pytest.approx((tuning["base_score"] + best_trial) / 2)
    else:
        assert not any(m.startswith(tuned) for m in result["cv"])
    # Every round says why it ended, and so does the tuning as a whole.
    assert isinstance(tuning["stopped"], str) and tuning["stopped"]
    assert all("family" in r and "stopped" in r for r in tuning["rounds"])


@pytest.mark.solo
def test_blend_kept_only_when_it_beats_the_best_single(titanic_solved: tuple[Path, dict, list[dict]]) -> None:
    _, result, _ = titanic_solved
    report = result["blend"]["Survived"]
    best_single = max(report["single_scores"].values())
    # A blender whose projected cost no longer fits the budget's end is dropped, with its reason.
    assert set(report["blend_scores"]) | set(report.get("dropped", {})) == {"weighted", "stack", "mlp", "boosted"}
    assert not set(report["blend_scores"]) & set(report.get("dropped", {}))
    if report["blend_scores"]:
        assert sum(report["weights"].values()) == pytest.approx(1.0)
    if report["method"] == "best_single":
        assert max(report["blend_scores"].values(), default=-math.inf) <= best_single
        # A losing blend stays a candidate only as the choice rule's challenger, at its nested score.
        if "blend" in result["cv"]:
            assert result["cv"]["blend"] == pytest.approx(report["challenger"]["score"])
            assert report["challenger"]["score"] == max(report["blend_scores"].values())
        else:
            assert "challenger" not in report
    else:
        assert report["score"] > best_single
        assert result["cv"]["blend"] == pytest.approx(report["score"])


def test_ranked_candidates_follow_the_metric_direction() -> None:
    found = [{"model": "a", "validation_score": 0.5}, {"model": "b", "validation_score": 0.2},
             {"model": "c", "validation_score": 0.5}, {"model": "d", "validation_score": 0.9}]
    assert [c["model"] for c in ranked_candidates(found, higher_is_better=True)] == ["d", "a", "c", "b"]
    # Lower is better (log loss, RMSE): ties keep the solver's order.
    assert [c["model"] for c in ranked_candidates(found, higher_is_better=False)] == ["b", "a", "c", "d"]


def test_time_budget_still_submits(titanic: Path, tmp_path: Path) -> None:
    out = tmp_path / "budget.csv"
    result, events = run_solver(titanic, "--time-budget", "0", "--out", str(out))
    assert result["model"] == "constant"
    assert any(e["event"] == "skip" and "budget" in e["reason"] for e in events)
    assert validate_submission(out, sample_path=titanic / "raw/data/sample_submission.csv") == []


def test_spooky_text(tmp_path: Path) -> None:
    workspace = spooky_workspace(tmp_path / "spooky")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["higher_is_better"] is False
    assert result["validation_score"] < 1.0 < result["cv"]["constant"]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    assert np.allclose(submission[["EAP", "HPL", "MWS"]].sum(axis=1), 1.0)


def test_house_regression(tmp_path: Path) -> None:
    workspace = house_workspace(tmp_path / "house")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["validation_score"] < 0.25 and result["cv"]["constant"] > 0.35
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    # expm1 brought predictions back to dollars.
    assert 50_000 < submission["SalePrice"].median() < 400_000


def test_image_shapes(tmp_path: Path) -> None:
    workspace = shapes_workspace(tmp_path / "shapes")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["validation_score"] >= 0.8


def test_features_titanic_and_batches(titanic: Path) -> None:
    artifacts = SetupArtifacts.load(titanic)
    features = build_features(artifacts)
    assert features.train_ids == artifacts.target_map["id"].tolist()
    assert features.tab_train.shape == (713, 4)  # Empty dropped
    assert features.tab_names == ["Pclass", "Sex", "Age", "Fare"]
    assert features.tab_kinds[1] == CATEGORY
    assert np.isnan(features.tab_train[:, 2]).sum() > 100  # Age keeps its missing values
    batch = first_batch(features, 32, targets=np.arange(713))
    assert batch["tab"].shape == (32, 4) and batch["target"].tolist() == list(range(32))
    assert not np.isnan(batch["tab"]).any()


def test_features_dates_text_images(tmp_path: Path) -> None:
    house = SetupArtifacts.load(house_workspace(tmp_path / "house"))
    features = build_features(house)
    assert "SoldDate__month" in features.tab_names and "SoldDate__year" in features.tab_names
    assert features.tab_kinds[features.tab_names.index("SoldDate__month")] == DATE_PART
    column = features.tab_names.index("SoldDate__month")
    month = house.train_maps["tab"].set_index("id").loc[features.train_ids, "MoSold"]
    assert np.array_equal(features.tab_train[:, column], month.to_numpy(dtype=float))

    spooky = SetupArtifacts.load(spooky_workspace(tmp_path / "spooky"))
    text = build_features(spooky, max_text_features=2000)
    assert text.text_train.shape[0] == 1200 and 0 < text.text_train.shape[1] <= 2000
    assert text.text_test.shape == (300, text.text_train.shape[1])
    assert text.tab_names[:2] == ["text__len", "text__words"]
    # Style counts beside them (the stacking level reads them to know which text model to trust).
    assert {"text__commas", "text__semicolons", "text__capitals", "text__mean_word_len"} <= set(text.tab_names)
    raw = spooky.train_maps["txt"].set_index("id").loc[text.train_ids, "text"]
    semicolons = text.tab_train[:, text.tab_names.index("text__semicolons")]
    assert np.array_equal(semicolons, raw.str.count(";").to_numpy(dtype=float))

    shapes = SetupArtifacts.load(shapes_workspace(tmp_path / "shapes"))
    images = build_features(shapes, image_size=16)
    assert images.image_train.shape == (48, 256) and images.image_shape == (1, 16, 16)
    batch = first_batch(images, 8, split="test")
    assert tuple(batch["image"].shape) == (8, 1, 16, 16)
    assert 0.0 <= float(batch["image"].min()) and float(batch["image"].max()) <= 1.0


def test_rare_classes_and_single_class_folds() -> None:
    strata = np.array([0] * 20 + [1] * 2 + [2] * 1)
    folds = make_folds(len(strata), 5, 0, strata)
    assert len(folds) == 5 and sorted(np.concatenate([v for _, v in folds]).tolist()) == list(range(23))
    spec = TargetSpec("y", "binary", [0, 1])
    X = np.random.default_rng(0).normal(size=(30, 3))
    for model in (LinearModel(spec), LightGBMModel(spec, ModelOptions(light=True))):
        proba = model.fit(X, np.zeros(30, dtype=int)).predict_proba(X)
        assert proba.shape == (30, 2) and np.allclose(proba[:, 0], 1.0)
    multi = TargetSpec("y", "multiclass", ["a", "b", "c"])
    proba = LinearModel(multi).fit(X, np.array([0, 2] * 15)).predict_proba(X)
    assert proba.shape == (30, 3) and np.allclose(proba[:, 1], 0.0)
    assert math.isclose(float(proba.sum(axis=1).mean()), 1.0)


def test_maps_only_workspace_loads(titanic: Path, tmp_path: Path) -> None:
    """The maps meta check probes a batch before the target/format/metric stages exist."""
    setup = tmp_path / "early" / "setup"
    setup.mkdir(parents=True)
    for name in ("train_tab_input_map.csv", "test_tab_input_map.csv"):
        (setup / name).write_bytes((titanic / "setup" / name).read_bytes())
    artifacts = SetupArtifacts.load(tmp_path / "early")
    features = build_features(artifacts)
    assert features.n_train == 713 and features.n_test == 178
    assert first_batch(features, 16)["tab"].shape[0] == 16
    with pytest.raises(FileNotFoundError, match="target_info"):
        artifacts.require_solvable()
    with pytest.raises(FileNotFoundError, match="code_metric.py"):
        artifacts.metric


def test_load_setup_module(tmp_path: Path) -> None:
    path = tmp_path / "code_metric.py"
    path.write_text(textwrap.dedent("""
        HIGHER_IS_BETTER = False
        def score(y_true, y_pred):
            return 0.5
    """))
    module = load_setup_module(path, "agentk_test_metric")
    assert module.HIGHER_IS_BETTER is False and module.score(None, None) == 0.5
    with pytest.raises(FileNotFoundError):
        load_setup_module(tmp_path / "missing.py", "agentk_missing")


RAISING_METRIC = '''
HIGHER_IS_BETTER = True

def score(y_true, y_pred):
    raise ValueError("this metric needs a leaderboard server")
'''


def _titanic_variant(root: Path, *, metric: str | None = None, one_class: bool = False,
                     unseen: bool = False) -> Path:
    """The titanic workspace with one thing made awkward, written the way a setup would."""
    import solver_workspaces as sw

    raw = pd.read_csv(sw.COMPETITIONS / "titanic/data/train.csv")
    raw["id"] = raw["PassengerId"].astype(str)
    raw["AllMissing"] = np.nan
    train, test = sw.split_rows(raw)
    if one_class:
        train["Survived"] = 0
    if unseen:
        # Levels the training rows never show: a new port, a new class label, a new sex.
        test.loc[test.index[:40], "Embarked"] = "X"
        test.loc[test.index[:40], "Sex"] = "unknown"
    features = ["id", "Pclass", "Sex", "Age", "Fare", "Embarked", "AllMissing"]
    sample = pd.DataFrame({"PassengerId": test["id"], "Survived": 0})
    return sw.write_workspace(
        root, inputs={"tab": (train[features], test[features])}, targets=train[["id", "Survived"]],
        test_ids=test["id"].tolist(), spec={"column": "Survived", "task": "binary", "classes": [0, 1]},
        id_name="PassengerId", metric=metric or sw.ACCURACY_METRIC, formatter=sw.LABEL_FORMAT, sample=sample)


def test_unscorable_metric_falls_back_to_a_surrogate(tmp_path: Path) -> None:
    workspace = _titanic_variant(tmp_path / "ws", metric=RAISING_METRIC)
    # The linear pace-setter alone (never skipped) is a real model under 0.5; at 6 s (load 8) every
    # family still finished, the best at 0.42 (0.42 at 15 s too).
    result, events = run_solver(workspace, "--folds", "3", "--time-budget", "6", "--no-tune")
    assert any(e["event"] == "metric_fallback" for e in events)
    assert result["metric"] == "surrogate" and result["higher_is_better"] is False
    # Ranked by log loss: a real model, not the constant it would otherwise be stuck with.
    assert result["model"] != "constant"
    assert result["validation_score"] < 0.5 < result["cv"]["constant"]
    assert validate_submission(workspace / "submissions/submission.csv",
                               sample_path=workspace / "raw/data/sample_submission.csv") == []


def test_one_class_target_still_submits(tmp_path: Path) -> None:
    workspace = _titanic_variant(tmp_path / "ws", one_class=True)
    # Any family that finishes predicts the one class; at 6 s (load 8) all six finished.
    result, events = run_solver(workspace, "--folds", "3", "--time-budget", "6", "--no-tune")
    submission = pd.read_csv(workspace / "submissions/submission.csv")
    assert validate_submission(workspace / "submissions/submission.csv",
                               sample_path=workspace / "raw/data/sample_submission.csv") == []
    # Nothing to separate: every family falls back to the class it saw.
    assert set(submission["Survived"]) == {0}
    assert result["validation_score"] == 1.0


def test_all_missing_column_and_unseen_categories(tmp_path: Path) -> None:
    workspace = _titanic_variant(tmp_path / "ws", unseen=True)
    result, _ = run_solver(workspace, "--folds", "3", "--time-budget", "20", "--no-tune")
    assert result["validation_score"] > 0.75 and result["model"] != "constant"
    submission = pd.read_csv(workspace / "submissions/submission.csv")
    assert validate_submission(workspace / "submissions/submission.csv",
                               sample_path=workspace / "raw/data/sample_submission.csv") == []
    assert submission["Survived"].notna().all() and set(submission["Survived"]) <= {0, 1}
    # Every finished family coped with the unseen levels in its test predictions.
    finished = [e["family"] for e in result["race"] if e["status"] == "finished"]
    for name in finished:
        test = pd.read_csv(workspace / "solve" / "predictions" / f"{name}_test.csv")
        assert test[["Survived__proba__0", "Survived__proba__1"]].notna().all().all()


@pytest.mark.solo
def test_fusion_on_tables_when_asked(titanic: Path, titanic_solved: tuple[Path, dict, list[dict]], tmp_path: Path) -> None:
    result, events = run_solver(titanic, "--folds", "3", "--time-budget", "25", "--no-tune", "--fusion", "on",
                                "--out", str(tmp_path / "fusion.csv"))
    race = {e["family"]: e for e in result["race"]}
    assert "fusion" in race and race["fusion"]["first_fold_score"] is not None
    # The net is a real contender on titanic: well above the constant on its first fold.
    assert race["fusion"]["first_fold_score"] > result["cv"]["constant"] + 0.1
    # The shared full solve ran with the default, --fusion auto, on the same table: no net raced.
    _, auto, _ = titanic_solved
    assert "fusion" not in {e["family"] for e in auto["race"]}  # auto: tables get no net


def test_compound_codes_are_split_into_parts(tmp_path: Path) -> None:
    raw = pd.read_csv(COMPETITIONS / "spaceship-titanic/data/train.csv", nrows=600)
    raw["id"] = raw["PassengerId"]
    columns = ["id", "Cabin", "HomePlanet"]
    artifacts_root = write_workspace(
        tmp_path / "ws", inputs={"tab": (raw[columns].iloc[:500], raw[columns].iloc[500:])},
        targets=raw[["id", "Transported"]].iloc[:500].astype({"Transported": str}),
        test_ids=raw["id"].iloc[500:].tolist(),
        spec={"column": "Transported", "task": "binary", "classes": ["False", "True"]}, id_name="PassengerId",
        metric=ACCURACY_METRIC, formatter=LABEL_FORMAT, sample=None)
    features = build_features(SetupArtifacts.load(artifacts_root))
    kinds = dict(zip(features.tab_names, features.tab_kinds, strict=True))
    # "B/0/P": the deck and the side are categories, the cabin number a number.
    assert kinds["Cabin__part0"] == CATEGORY and kinds["Cabin__part2"] == CATEGORY
    assert kinds["Cabin__part1"] == "numeric"
    deck = features.tab_train[:, features.tab_names.index("Cabin__part0")]
    assert 4 <= len(np.unique(deck[~np.isnan(deck)])) <= 8
    assert not any(name.startswith("HomePlanet__part") for name in features.tab_names)
