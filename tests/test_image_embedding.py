"""Frozen pretrained image features: real EfficientNet-Lite weights on real photos (a few monkeys
from the shared development set), the budget probe, the per-image cache and the fallbacks."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from solve_pipeline.images import image_embedding
from solve_pipeline.inputs.features import build_features
from solve_pipeline.images.image_backbones import available_backbones, cheapest, torchvision_usable
from solve_pipeline.images.image_embedding import (
    ImagePlan, TooSlow, embed_images, load_rgb, native_px, partial_plan, plan_embedding, split_head,
)
from solve_pipeline.fusion.pretrained_features import _priority, pretrained_features, pretrained_matrices
from solve_pipeline.base.setup_modules import SetupArtifacts
from helpers import monkey_photos
from solver_workspaces import shapes_workspace

pytestmark = pytest.mark.integration

def lite0() -> ImagePlan:
    backbone = cheapest(available_backbones())
    assert backbone is not None and backbone.name == "efficientnet-lite0"
    return ImagePlan(backbone, 96, False, 0.0)


def test_the_pypi_backbones_are_found_and_torchvision_is_optional() -> None:
    names = [b.name for b in available_backbones()]
    assert names[-3:] == ["efficientnet-lite2", "efficientnet-lite1", "efficientnet-lite0"] or \
        {"efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"} <= set(names)
    if not torchvision_usable():  # the default install: the zoo adds nothing, nothing breaks
        assert all(not n.startswith("torchvision") for n in names)


def test_imagenet_features_separate_monkey_species(tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    paths, labels = monkey_photos()
    embedded = embed_images(paths, lite0(), cache_dir=tmp_path)
    assert embedded is not None and embedded.dtype == np.float32
    vectors, _ = split_head(embedded, lite0())
    assert vectors.shape == (len(paths), 1280)
    accuracy = cross_val_score(LogisticRegression(C=0.1, max_iter=1000), vectors, labels, cv=4).mean()
    assert accuracy >= 0.6  # three species, 8 photos each: chance is 0.33


def test_the_imagenet_head_is_a_second_block_from_the_same_pass_and_is_cached(tmp_path: Path) -> None:
    paths, _ = monkey_photos(per_class=2)
    plan = lite0()
    vectors = embed_images(paths, plan, cache_dir=tmp_path)
    assert vectors is not None and vectors.shape == (len(paths), 1280 + 1000)
    pooled, head = split_head(vectors, plan)
    assert pooled.shape == (len(paths), 1280) and head is not None and head.shape == (len(paths), 1000)
    # ImageNet's own classifier: its primates (classes 365-384) take most of a monkey photo's mass.
    proba = np.exp(head - head.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    assert proba[:, 365:385].sum(axis=1).mean() > 0.5
    cached = np.load(tmp_path / f"{plan.cache_label}.npz")
    assert cached["vectors"].shape == (len(paths), 2280) and plan.cache_label.endswith("+head")

    def no_network() -> None:
        raise AssertionError("the head is cached with the pooled features: no second pass")

    again = embed_images(paths, dataclasses.replace(plan, backbone=dataclasses.replace(plan.backbone, build=no_network)),
                         cache_dir=tmp_path)
    assert again is not None and np.array_equal(again, vectors)


def test_flip_averaging_leaves_a_mirror_symmetric_photo_as_it_was(tmp_path: Path) -> None:
    paths, _ = monkey_photos(per_class=1)
    photo = np.asarray(Image.open(paths[0]).convert("RGB").resize((96, 96)))
    symmetric = np.concatenate([photo[:, :48], photo[:, :48][:, ::-1]], axis=1)
    Image.fromarray(symmetric).save(tmp_path / "symmetric.png")  # lossless: the symmetry survives
    Image.fromarray(photo).save(tmp_path / "photo.png")
    plain, flipped = lite0(), dataclasses.replace(lite0(), flip_tta=True)
    assert flipped.cache_label != plain.cache_label

    def gap(name: str) -> float:
        one = embed_images([str(tmp_path / name)], plain, cache_dir=tmp_path / "cache")
        both = embed_images([str(tmp_path / name)], flipped, cache_dir=tmp_path / "cache")
        assert one is not None and both is not None
        return float(np.abs(both - one).max() / np.abs(one).max())

    assert gap("symmetric.png") < 1e-5
    assert gap("photo.png") > 0.01  # the mirror is really averaged in


def test_the_cache_answers_without_the_network_and_a_bad_file_gets_the_mean(tmp_path: Path) -> None:
    paths, _ = monkey_photos(per_class=2)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    plan = lite0()
    with pytest.warns(UserWarning, match="cannot read image"):
        first = embed_images([*paths, str(broken), ""], plan, cache_dir=tmp_path / "cache")
    assert first is not None
    assert np.allclose(first[-1], first[:-2].mean(axis=0)) and np.allclose(first[-2], first[-1])
    assert (tmp_path / "cache" / f"{plan.cache_label}.npz").is_file()

    def no_network() -> None:
        raise AssertionError("every image is cached: the backbone must not be loaded")

    cached_plan = dataclasses.replace(plan, backbone=dataclasses.replace(plan.backbone, build=no_network))
    again = embed_images(paths, cached_plan, cache_dir=tmp_path / "cache")
    assert again is not None and np.array_equal(again, first[: len(paths)])
    # A file replaced in place is a new image: its old vector is not reused.
    replaced = tmp_path / "copy.jpg"
    replaced.write_bytes(Path(paths[0]).read_bytes())
    copy = embed_images([str(replaced)], plan, cache_dir=tmp_path / "cache")
    assert copy is not None and np.allclose(copy[0], first[0], atol=1e-4)
    replaced.write_bytes(Path(paths[1]).read_bytes())
    os.utime(replaced, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    moved = embed_images([str(replaced)], plan, cache_dir=tmp_path / "cache")
    assert moved is not None and np.allclose(moved[0], first[1], atol=1e-4)


def test_the_probe_plans_within_the_budget_and_declines_what_cannot_fit(tmp_path: Path) -> None:
    paths, _ = monkey_photos(per_class=8)
    assert native_px(paths) == 250
    plans, why = plan_embedding(paths, seconds=600.0)
    assert plans, why
    assert plans[0].projected_s <= 600 and all(p.px <= 256 for p in plans)
    assert plans[0].backbone.name != "efficientnet-lite0" or plans[0].px >= 192  # 600 s buys the best
    x = load_rgb(paths[0], 160)
    assert x is not None and x.shape == (3, 160, 160) and 0.0 <= x.min() and x.max() <= 1.0


def test_a_partial_plan_keeps_what_the_time_allowed_and_says_what_was_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths, _ = monkey_photos(per_class=2)
    # Far too little time for most images: no plan, since rows sharing the mean vector teach nothing.
    plans, why = plan_embedding(paths * 200, seconds=0.5)
    assert plans == [] and "too few would be embedded" in why
    monkeypatch.setattr(image_embedding, "PARTIAL_MIN_SHARE", 0.0)
    plans, why = plan_embedding(paths * 200, seconds=0.5)
    assert len(plans) == 1 and plans[0].partial and plans[0].px == 96 and "need" in why
    plan = partial_plan(lite0().backbone, 10.0, 0.01)
    assert plan.cache_label == lite0().cache_label  # a full run's vectors serve it, and back
    embed_images(paths[:2], lite0(), cache_dir=tmp_path)
    missing: list[int] = []
    # The deadline has passed: a full plan would raise TooSlow; a partial one returns what it has.
    vectors = embed_images(paths, plan, cache_dir=tmp_path, deadline=time.monotonic() - 1, missing=missing)
    assert vectors is not None and vectors.shape == (len(paths), 2280) and missing == [2, 3, 4, 5]
    assert np.allclose(vectors[2:], vectors[:2].mean(axis=0))
    # Test images (rows 3-4 of each column) come first, then every train row once, shuffled.
    order = _priority(n_train=3, n_test=2, columns=2)
    assert order[:4] == [3, 4, 8, 9] and sorted(order[4:]) == [0, 1, 2, 5, 6, 7]


def test_tiny_images_are_left_to_the_small_cnn(tmp_path: Path) -> None:
    paths = []
    for i in range(4):
        path = tmp_path / f"digit{i}.png"
        Image.new("L", (8, 8), 40 * i).save(path)
        paths.append(str(path))
    plans, why = plan_embedding(paths, seconds=100.0)
    assert plans == [] and "small CNN" in why


def test_a_passed_deadline_stops_embedding(tmp_path: Path) -> None:
    paths, _ = monkey_photos(per_class=2)
    with pytest.raises(TooSlow):
        embed_images(paths, lite0(), cache_dir=tmp_path, deadline=time.monotonic() - 1)


def test_a_workspace_gets_one_shared_embedding_beside_its_table(tmp_path: Path) -> None:
    workspace = shapes_workspace(tmp_path / "shapes")
    artifacts = SetupArtifacts.load(workspace)
    features = build_features(artifacts, image_size=16)
    assert features.image_paths_train is not None and len(features.image_paths_train["path"]) == 48
    found = pretrained_features(features, seconds=120.0)
    assert found.image is not None and found.image.source.startswith("image:efficientnet-lite")
    assert found.image.train.shape == (48, 1280) and found.image.test.shape == (12, 1280)
    assert found.image_head is not None and found.image_head.source.startswith("image-head:efficientnet-lite")
    assert found.image_head.train.shape == (48, 1000) and found.image_head.test.shape == (12, 1000)
    assert found.text is None and found.notes and found.notes[0].startswith("images:")
    assert "ImageNet head" in found.notes[0]
    assert pretrained_features(features, seconds=1.0) is found  # one forward pass per FeatureSet
    train, test = pretrained_matrices(features, seconds=1.0)
    assert train.shape == (48, 1280) and test.shape[0] == 12
    with_head = pretrained_matrices(features, seconds=1.0, head=True)
    assert with_head is not None and with_head[0].shape == (48, 1280 + 1000) and with_head[1].shape == (12, 2280)
    assert abs(float(np.vstack([train, test]).mean())) < 1e-3  # standardized
    assert list((workspace / "solve" / "cache" / "image_embeddings").glob("*.npz"))


@pytest.mark.skipif(not torchvision_usable(), reason="torchvision is the optional agentk[vision] extra")
def test_torchvision_checkpoints_in_the_weights_folder_join_the_options(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    import torchvision

    # Untrained weights stand in for the real checkpoint (no download here): the loading path,
    # the classifier removal and the pooled width are what is checked.
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), tmp_path / "resnet18-f37072fd.pth")
    monkeypatch.setenv("AGENTK_TORCH_WEIGHTS", str(tmp_path))
    found = {b.name: b for b in available_backbones()}
    assert "torchvision-resnet18" in found and found["torchvision-resnet18"].width == 512
    paths, _ = monkey_photos(per_class=2)
    plan = ImagePlan(found["torchvision-resnet18"], 96, True, 0.0)
    vectors = embed_images(paths, plan, cache_dir=tmp_path)
    assert vectors is not None and vectors.shape == (len(paths), 512 + 1000)
    assert split_head(vectors, plan)[0].shape == (len(paths), 512)
