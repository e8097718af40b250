"""The solver with pretrained networks, end to end as a subprocess: frozen image features enter
the race and are cached for the next run; MiniLM is fine-tuned when its timed probe fits."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solver_workspaces import check_solved, run_solver, shapes_workspace, tweets_workspace

pytestmark = [pytest.mark.integration, pytest.mark.solo]


def test_images_get_a_pretrained_family_and_a_resumed_run_reuses_the_embeddings(tmp_path: Path) -> None:
    workspace = shapes_workspace(tmp_path / "shapes")
    result, events = run_solver(workspace, "--time-budget", "60", "--folds", "2", "--no-tune")
    check_solved(workspace, result, events)
    pretrained = next(e for e in events if e["event"] == "pretrained")
    assert pretrained["sources"][0].startswith("image:efficientnet-lite"), pretrained
    assert result["race"][0]["family"] == "pretrained_head"  # it sets the pace on images
    assert pretrained["sources"][1].startswith("image-head:efficientnet-lite"), pretrained
    assert result["cv"]["pretrained_head"] is not None and result["cv"]["pretrained_head"] > result["cv"]["constant"]
    assert result["cv"]["pretrained_linear"] is not None
    assert result["cv"]["pretrained_linear"] > result["cv"]["constant"]
    # 60 tiny images: maps and epochs are cheap, so the last block is fine-tuned too.
    plan = next(e for e in events if e["event"] == "finetune_plan")
    assert plan["notes"][0].startswith("images: efficientnet-lite"), plan
    assert result["finetune"]["runs"][0]["model"] == "image_finetune", result["finetune"]
    assert result["cv"]["image_finetune"] > result["cv"]["constant"]
    assert list((workspace / "solve" / "cache" / "image_maps").iterdir())
    if not torch.cuda.is_available():  # the record says what ran where
        record = result["device"]
        assert (record["choice"], record["used"], record["notes"]) == ("auto", "cpu", [])
        assert {"image embedding", "image maps", "image fine-tuning"} <= set(record["parts"])
        assert set(record["parts"].values()) == {"cpu"}
    cached = list((workspace / "solve" / "cache" / "image_embeddings").glob("*.npz"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns

    again, events = run_solver(workspace, "--time-budget", "10", "--folds", "2", "--no-tune")
    assert next(e for e in events if e["event"] == "pretrained")["sources"] == pretrained["sources"]
    assert cached[0].stat().st_mtime_ns == stamp  # read back, not recomputed
    # The pace-setter runs first whatever the budget: the same features give the same folds' score.
    assert again["race"][0]["family"] == "pretrained_head"
    assert again["cv"]["pretrained_head"] == result["cv"]["pretrained_head"]


def test_minilm_is_fine_tuned_when_the_probe_says_it_fits(tmp_path: Path) -> None:
    workspace = tweets_workspace(tmp_path / "tweets")
    # Asking for CUDA where there is none is no dead end: the CPU runs it, and the record says so.
    result, events = run_solver(workspace, "--time-budget", "90", "--folds", "2", "--no-tune", "--device", "cuda")
    check_solved(workspace, result, events)
    if not torch.cuda.is_available():
        assert result["device"]["choice"] == "cuda" and result["device"]["used"] == "cpu"
        assert result["device"]["parts"]["text fine-tuning"] == "cpu"
        assert [e["message"] for e in events if e["event"] == "device"] == result["device"]["notes"]
        assert len(result["device"]["notes"]) == 1 and "no CUDA device" in result["device"]["notes"][0]
    plan = next(e for e in events if e["event"] == "finetune_plan")
    assert plan["notes"] and plan["notes"][0].startswith("text: MiniLM fine-tuning"), plan
    run = result["finetune"]["runs"][0]
    assert run["model"] == "minilm_finetune" and run["finished"] is True, result["finetune"]
    assert result["cv"]["minilm_finetune"] is not None
    assert "minilm_finetune" in {c["model"] for c in result["candidates"]}
