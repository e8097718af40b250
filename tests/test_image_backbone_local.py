"""The user's own image models (`--image-backbone`, the local hub cache) as backbones: tiny
transformers models built here with random weights and saved as a user would have them, then
listed, priced by their own timed probe, used on real photos, and run end to end through `agentk
run`; corrupt files say one line and the bundled EfficientNet-Lite carry on."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from agentk.core.records.config import RunConfig
from agentk.core.local_image_models import PUBLISHED_TOP1, named_setting
from helpers import monkey_photos
from solve_pipeline.images import image_backbones_local as local
from solve_pipeline.images.image_embedding import embed_images, plan_embedding
from solve_pipeline.solver import parse_args

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared"
MEAN, STD = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
# The images get 40% of the budget, and the probes (Lite0's two timed batches, loading the named
# model) come out of it. On two cores shared with other jobs (load 8-10) the probes alone took 8 s:
# with all 1797 digits, at 20 or 40 s what was left did not fit even the tiny model in some tries.
# The run keeps 40 training images a class and the 360 test images (760 to embed): at 40 s that
# leaves each image more time than 60 s left 1797 (the tiny model needed 5 s at load 5).
BUDGET_S = "40"
TRAIN_PER_CLASS = 40


def save_vit(folder: Path, *, classifier: bool = False) -> Path:
    """A 2-layer ViT at 64 px with its image processor's config, as save_pretrained writes them."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       image_size=64, patch_size=8, num_labels=3)
    (ViTForImageClassification if classifier else ViTModel)(config).save_pretrained(folder)
    ViTImageProcessor(size={"height": 64, "width": 64}, image_mean=MEAN, image_std=STD).save_pretrained(folder)
    return folder


def save_convnext(folder: Path) -> Path:
    from transformers import ConvNextConfig, ConvNextImageProcessor, ConvNextModel

    torch.manual_seed(0)
    ConvNextModel(ConvNextConfig(hidden_sizes=[8, 16, 24, 40], depths=[1, 1, 1, 1])).save_pretrained(folder)
    ConvNextImageProcessor(size={"shortest_edge": 96}, crop_pct=1.0).save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def fresh_state() -> Iterator[None]:
    local.configure(None)
    yield
    local.configure(None)  # later tests in this process see only the bundled backbones


def events(out: str, kind: str) -> list[dict]:
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [e for e in lines if e["event"] == kind]


def test_a_named_model_is_priced_by_its_own_probe_and_embeds_photos_with_its_normalisation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = save_vit(tmp_path / "my vit")
    local.configure(named_setting(str(folder)))
    paths, _ = monkey_photos(per_class=4)
    plans, why = plan_embedding(paths, seconds=120.0)
    first = plans[0].backbone
    # Named and fitting: it goes first, at its own training size, with the config's width.
    assert isinstance(first, local.LocalBackbone) and first.name.startswith("hf-my_vit-"), why
    assert (plans[0].px, first.width, first.native_px) == (64, 32, 64)
    assert [p.backbone.name for p in plans[1:]] == [p.backbone.name for p in plans[1:] if not p.backbone.name.startswith("hf-")]
    # Priced by timing it on the probe's batch, not by a guess.
    record = local.summary()
    assert record is not None and record["named"] == str(folder)
    offered = record["offered"][0]
    assert offered["relative_cost"] == pytest.approx(first.relative_cost, rel=1e-2) and 0 < first.relative_cost < 1e3
    # Trained at 64 px, it is timed there (the probe's batch is at 128), where it will run.
    assert offered["probe_px"] == 64 and offered["probe_ms_per_image"] > 0
    assert record["notes"] == [] and not events(capsys.readouterr().out, "image_backbone")

    vectors = embed_images(paths, plans[0], cache_dir=tmp_path / "cache")
    assert vectors is not None and vectors.shape == (len(paths), 32) and vectors.dtype == np.float32
    assert np.linalg.matrix_rank(vectors) > 1  # the photos differ, so do their features
    # The processor's mean and std, not ImageNet's: the features equal the model's own on the
    # image normalised by hand (the pooler was trained: a base model's checkpoint holds it).
    from transformers import ViTModel

    from solve_pipeline.images.image_embedding import load_rgb

    rgb = torch.from_numpy(np.stack([load_rgb(p, 64) for p in paths[:2]]))  # type: ignore[misc]
    by_hand = (rgb - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
    with torch.inference_mode():
        expected = ViTModel.from_pretrained(folder).eval()(pixel_values=by_hand).pooler_output
    plain = embed_images(paths[:2], dataclasses.replace(plans[0], flip_tta=False), cache_dir=None)
    assert plain is not None and np.allclose(plain, expected.numpy(), atol=1e-4)
    assert local.chosen_note(first).startswith(" (named by --image-backbone")
    assert local.summary()["chosen"] == first.name  # type: ignore[index]


def test_a_pyramid_model_pools_its_last_stage_and_a_classifier_checkpoint_uses_its_class_token(tmp_path: Path) -> None:
    local.configure(str(save_convnext(tmp_path / "convnext")))
    paths, _ = monkey_photos(per_class=2)
    plans, why = plan_embedding(paths, seconds=120.0)
    assert plans[0].backbone.name.startswith("hf-convnext-"), why
    assert (plans[0].backbone.width, plans[0].px) == (40, 96)  # hidden_sizes[-1]; its processor's size
    vectors = embed_images(paths, plans[0], cache_dir=None)
    assert vectors is not None and vectors.shape == (len(paths), 40)

    # A classifier's checkpoint has no trained pooler: the class token stands in for it.
    from agentk.core.local_image_models import describe

    folder = save_vit(tmp_path / "classifier", classifier=True)
    module = local._load_transformers(describe(folder, str(folder), named=True))
    assert module.pooler_trained is False
    x = torch.rand(2, 3, 64, 64)
    with torch.inference_mode():
        hidden = module.model(pixel_values=(x - module.mean) / module.std).last_hidden_state
        assert torch.allclose(module(x), hidden[:, 0], atol=1e-5)


def test_corrupt_files_say_one_line_and_the_bundled_backbones_carry_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = save_vit(tmp_path / "broken")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:2000])  # a download cut short
    local.configure(str(folder))
    paths, _ = monkey_photos(per_class=2)
    plans, why = plan_embedding(paths, seconds=120.0)
    assert plans and all(p.backbone.name.startswith("efficientnet-lite") for p in plans), why
    said = events(capsys.readouterr().out, "image_backbone")
    assert len(said) == 1 and str(folder) in said[0]["message"] and "using the bundled backbones" in said[0]["message"]
    assert "\n" not in said[0]["message"] and local.summary()["notes"] == [said[0]["message"]]  # type: ignore[index]

    (folder / "config.json").write_text('{"model_type": "no-such-architecture"}', encoding="utf-8")
    local.configure(str(folder))
    plans, _ = plan_embedding(paths, seconds=120.0)
    assert plans and plans[0].backbone.name.startswith("efficientnet-lite")
    assert "no-such-architecture" in local.summary()["notes"][0]  # type: ignore[index]
    # A folder without a model, and a model too slow for the budget, fall back the same way.
    local.configure(str(tmp_path))
    plan_embedding(paths, seconds=120.0)
    assert "no config.json" in local.summary()["notes"][0]  # type: ignore[index]
    local.configure(str(save_vit(tmp_path / "fine")))
    plans, _ = plan_embedding(paths * 50_000, seconds=1.0)
    assert not any(p.backbone.name.startswith("hf-") for p in plans)
    assert "allowed" in local.summary()["notes"][0]  # type: ignore[index]


def test_a_cached_checkpoint_with_a_better_published_score_goes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    # The hub cache's layout: the repo's snapshot that refs/main names (a tiny ViT stands in).
    repo = tmp_path / "hub" / "models--facebook--dinov2-small"
    save_vit(repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123", encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    paths, _ = monkey_photos(per_class=2)
    plans, why = plan_embedding(paths, seconds=120.0)
    assert plans[0].backbone.name == "hf-facebook--dinov2-small", why
    offered = local.summary()["offered"]  # type: ignore[index]
    assert offered[0]["published_top1"] == PUBLISHED_TOP1["facebook/dinov2-small"]
    assert "above efficientnet-lite2's 77.6%" in offered[0]["why"]
    assert "published top-1" in local.chosen_note(plans[0].backbone)
    # The runner shows the sandboxed solver that repo (and no other part of the cache).
    from agentk.core.local_image_models import solver_env, solver_mounts

    assert solver_mounts(None) == [repo.resolve()] and solver_env() == {"HF_HUB_CACHE": str(tmp_path / "hub")}
    # The same repo named by id is found in the cache.
    local.configure("facebook/dinov2-small")
    assert plan_embedding(paths, seconds=120.0)[0][0].backbone.name == "hf-facebook--dinov2-small"


def test_the_setting_travels_from_the_flag_to_the_solver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = save_vit(tmp_path / "vit")
    monkeypatch.chdir(tmp_path)
    assert named_setting("vit") == str(folder.resolve())  # the saved config does not depend on the current folder
    assert named_setting("facebook/dinov2-small") == "facebook/dinov2-small"
    with pytest.raises(ValueError, match="no such folder"):
        named_setting(str(tmp_path / "missing"))
    config = RunConfig(image_backbone=str(folder))
    assert config.solve.image_backbone == str(folder)
    assert "image_backbone" not in RunConfig().model_dump(mode="json")["solve"]  # unset: config.json as before
    (tmp_path / "config.json").write_text(config.model_dump_json(), encoding="utf-8")
    assert parse_args([str(tmp_path)]).image_backbone == str(folder)
    assert parse_args([str(tmp_path), "--image-backbone", "x/y"]).image_backbone == "x/y"
    from agentk.campaign.command import merged_options

    # A campaign keeps it in the run config its tasks run with.
    assert merged_options({}, {"image_backbone": str(folder)}, {}).run.solve.image_backbone == str(folder)
    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(tmp_path), "--image-backbone",
                           str(tmp_path / "missing")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no such folder" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_agentk_run_embeds_the_digits_with_the_named_model(tmp_path: Path) -> None:
    model = save_vit(tmp_path / "model")
    source = tmp_path / "digits"
    subprocess.run([sys.executable, str(SHARED / "tools" / "make_digits_competition.py"), str(source)], check=True)
    for label in (source / "data" / "train").iterdir():  # fewer to embed: the test set stays whole
        for extra in sorted(label.glob("*.png"))[TRAIN_PER_CLASS:]:
            extra.unlink()
    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", BUDGET_S, "--folds", "3", "--image-backbone", str(model), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = next((tmp_path / "ws").glob("digit*"))
    result = json.loads((workspace / "result.json").read_text(encoding="utf-8"))
    assert result["valid_submission"] is True
    solved = json.loads((workspace / "solve" / "solve_result.json").read_text(encoding="utf-8"))
    record = solved["image_backbone"]
    assert record["named"] == str(model) and record["chosen"] and record["chosen"].startswith("hf-model-"), record
    said = [json.loads(line) for line in (workspace / "logs" / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    pretrained = next(e for e in said if e.get("kind") == "pretrained")
    assert pretrained["sources"][0].startswith(f"image:{record['chosen']}@64"), pretrained
    assert "named by --image-backbone" in pretrained["notes"][0]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    assert len(submission) == 360 and submission["label"].between(0, 9).all()
