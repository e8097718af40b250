"""Fine-tuning EfficientNet-Lite's last blocks on cached trunk maps: real Lite0 weights on a few
real monkey photos from the shared development set, at 96 px to stay quick."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from solve_pipeline.images import image_maps
from solve_pipeline.base.baseline_models import ConstantModel, ModelOptions
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.images.image_backbones import available_backbones, cheapest
from solve_pipeline.images.image_embedding import ImagePlan
from solve_pipeline.images.image_finetune import ImageFinetuneModel, estimate_finetune_seconds
from solve_pipeline.images.image_maps import FinetuneInputs, image_finetune_matrices, maps_megabytes, trunk_maps
from solve_pipeline.base.setup_modules import TargetSpec
from helpers import monkey_photos

pytestmark = pytest.mark.integration

CLASSES = ("n0", "n3", "n7")
PER_CLASS = 10
QUICK = {"max_epochs": 2}
# One thread: two on a busy 2-core machine measured twice as slow here.
ONE = ModelOptions(threads=1)


def lite0_plan() -> ImagePlan:
    backbone = cheapest(available_backbones())
    assert backbone is not None and backbone.name == "efficientnet-lite0"
    return ImagePlan(backbone, 96, True, 0.0)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[FinetuneInputs, np.ndarray]:
    paths, labels = monkey_photos(PER_CLASS, CLASSES)
    plan = lite0_plan()
    maps = trunk_maps(paths, plan, cache_dir=tmp_path_factory.mktemp("maps"), threads=1)
    assert maps is not None
    return FinetuneInputs(maps, plan.backbone, image_maps.DEFAULT_K), labels


def multiclass() -> TargetSpec:
    return TargetSpec("species", "multiclass", list(CLASSES))


def test_maps_are_cached_per_image_and_reused_without_the_network(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    paths, _ = monkey_photos(PER_CLASS, CLASSES)
    paths = paths[:3]
    plan = lite0_plan()
    first = trunk_maps(paths, plan, cache_dir=tmp_path, threads=1)
    # Lite0 at 96 px: the last block's input is 192 channels at stride 32; both views differ.
    assert first is not None and first.shape == (3, 2, 192, 3, 3) and first.dtype == np.float16
    assert not np.array_equal(first[:, 0], first[:, 1])

    def no_network() -> None:
        raise AssertionError("every map is cached: the backbone must not be loaded")

    monkeypatch.setattr(image_maps, "_MODULES", {})
    cached = dataclasses.replace(plan, backbone=dataclasses.replace(plan.backbone, build=no_network))
    again = trunk_maps(["", *paths], cached, cache_dir=tmp_path)
    assert again is not None and np.array_equal(again[1:], first)
    # A row without an image gets the mean map.
    assert np.allclose(again[0].astype(np.float32), first.astype(np.float32).mean(axis=0), atol=1e-2)
    assert maps_megabytes(plan.backbone, 96, 2, 1000) == pytest.approx(1000 * 2 * 192 * 9 * 2 / 1e6)


def test_matrices_from_a_feature_set_slice_like_a_matrix(tmp_path: Path) -> None:
    paths, _ = monkey_photos(PER_CLASS, CLASSES)
    train, test = paths[:4], [paths[4], ""]
    features = FeatureSet(
        train_ids=[str(i) for i in range(4)], test_ids=["a", "b"],
        tab_train=np.zeros((4, 0), np.float32), tab_test=np.zeros((2, 0), np.float32),
        image_paths_train={"photo": train, "other": train}, image_paths_test={"photo": test, "other": test},
        cache_dir=tmp_path,
    )
    plan = lite0_plan()
    # The probe's price says the maps cannot be built in time: nothing is attempted.
    assert image_finetune_matrices(features, 0, plan=dataclasses.replace(plan, per_image_s=10.0), seconds=5) is None
    built = image_finetune_matrices(features, 0, plan=plan, seconds=120, threads=1)
    assert built is not None
    X, X_test = built
    assert len(X) == 4 and X.shape == (4, 2, 192, 3, 3) and X_test.shape[0] == 2
    part = X[np.array([3, 1])]
    assert isinstance(part, FinetuneInputs) and len(part) == 2 and np.array_equal(part.maps[0], X.maps[3])
    assert part.backbone == X.backbone and part.k == X.k
    assert image_finetune_matrices(features, 0, plan=plan, seconds=120, threads=1) is built  # memoised
    assert any((tmp_path / "image_maps").iterdir())


def test_three_species_are_learnt_deterministically(inputs: tuple[FinetuneInputs, np.ndarray]) -> None:
    X, y = inputs
    fit_rows = np.arange(len(y)) % PER_CLASS < 6
    threads = torch.get_num_threads()
    options = ModelOptions(seed=3, threads=1)
    model = ImageFinetuneModel(multiclass(), options, {"max_epochs": 3}).fit(
        X[fit_rows], y[fit_rows], X_val=X[~fit_rows], y_val=y[~fit_rows])
    assert torch.get_num_threads() == threads
    proba = model.predict_proba(X[~fit_rows])
    assert proba.shape == (int((~fit_rows).sum()), 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert (proba.argmax(axis=1) == y[~fit_rows]).mean() >= 0.6  # chance is 0.33
    assert model.fallback_ is None and len(model.history_) == model.epochs_run_ >= 1
    twin = ImageFinetuneModel(multiclass(), options, {"max_epochs": 3}).fit(
        X[fit_rows], y[fit_rows], X_val=X[~fit_rows], y_val=y[~fit_rows])
    assert np.allclose(twin.predict_proba(X[~fit_rows]), proba)


def test_no_time_or_one_class_gives_the_constant_model(inputs: tuple[FinetuneInputs, np.ndarray]) -> None:
    X, y = inputs
    late = ModelOptions(threads=1, deadline=time.monotonic() - 1.0)
    model = ImageFinetuneModel(multiclass(), late, QUICK).fit(X, y)
    assert isinstance(model.fallback_, ConstantModel)
    assert np.allclose(model.predict_proba(X[:2]), [[1 / 3] * 3] * 2)
    single = ImageFinetuneModel(multiclass(), ONE, QUICK).fit(X[:5], np.zeros(5, dtype=int))
    assert isinstance(single.fallback_, ConstantModel) and np.array_equal(single.predict(X[:2]), [0, 0])
    with pytest.raises(ValueError, match="unknown fine-tuning parameters"):
        ImageFinetuneModel(multiclass(), ONE, {"learning_rate": 0.1})


def test_regression_predicts_finite_values_on_the_target_scale(inputs: tuple[FinetuneInputs, np.ndarray]) -> None:
    X, y = inputs
    target = 100.0 + 10.0 * y + np.random.RandomState(0).normal(size=len(y))
    # The first epoch trains the head alone, the second the pretrained block too.
    model = ImageFinetuneModel(TargetSpec("weight", "regression"), ONE, {**QUICK, "head_epochs": 1}).fit(
        X[::2], target[::2], X_val=X[1::2], y_val=target[1::2])
    values = model.predict(X[1::2])
    assert values.shape == (len(y) // 2,) and np.isfinite(values).all()
    assert 80.0 < values.mean() < 140.0


def test_the_estimate_comes_from_a_timed_batch(inputs: tuple[FinetuneInputs, np.ndarray]) -> None:
    X, _ = inputs
    one = estimate_finetune_seconds(X.shape, 100, 1.0, threads=1)
    assert 0.0 < one < 60.0
    assert estimate_finetune_seconds(X.shape[2:], 300, 2.0, threads=1) > one  # cached pace, more work
