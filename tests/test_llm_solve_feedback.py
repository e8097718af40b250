"""The LLM solve policy's second increment (issue #27): on by default with an LLM policy (off with
--no-llm-solve, never with the expert), the ablation each later request carries (MLE-STAR's score
feedback per part of the best pipeline), and the finetune action, offered only where the solver's
fine-tuning plan has a network that fits the time left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer
from llm_solve_helpers import RATIO_FEATURE, model_reply, ratio_workspace, solve_with_llm
from solver_workspaces import check_solved, shapes_workspace
from typer.testing import CliRunner

from agentk.cli import app
from agentk.core.records.config import CONFIG_FILE, RunConfig, SolveSettings
from agentk.core.records.solve_decisions import Ablation
from agentk.report.run_report import render_run_report
from agentk.runner import _with_llm_solve
from solve_pipeline.llm.llm_summary import finetunable

LLM = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "qwen2.5-coder-7b"}


@pytest.fixture
def no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENTK_LLM_BASE_URL", "AGENTK_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_an_llm_policy_steers_the_solve_unless_told_not_to(no_llm_environment: None) -> None:
    assert _with_llm_solve(RunConfig(**LLM)).solve.llm_solve is True  # hybrid, the default with an LLM
    assert _with_llm_solve(RunConfig(policy="llm", **LLM)).solve.llm_solve is True
    assert _with_llm_solve(RunConfig(policy="hybrid", llm_solve=False, **LLM)).solve.llm_solve is False
    for expert in (RunConfig(), RunConfig(policy="expert", **LLM)):
        resolved = _with_llm_solve(expert)
        assert resolved.solve.llm_solve is None
        # The expert's config.json is the one it wrote before the option existed.
        assert "llm_solve" not in resolved.model_dump_json() and resolved == expert
    # A choice made is written and reads back as made.
    off = _with_llm_solve(RunConfig(policy="llm", llm_solve=False, **LLM))
    assert RunConfig.model_validate_json(off.model_dump_json()).solve.llm_solve is False


def test_the_cli_offers_both_switches() -> None:
    text = CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "--llm-solve" in text and "--no-llm-solve" in text


SETTINGS = SolveSettings(folds=3, seed=0, time_budget_s=60, fusion="off", blend_after=2, llm_solve=True)


@pytest.mark.integration
def test_later_requests_carry_the_ablation_and_a_table_offers_no_finetune(tmp_path: Path) -> None:
    workspace = ratio_workspace(tmp_path / "ws", SETTINGS)
    replies = [
        lambda r: Reply(model_reply("feature", "The target seems to follow the ratio of a and b.", code=RATIO_FEATURE)),
        lambda r: Reply(model_reply("tune", "The ablation says tuning is not measured yet.", r.tunable[0])),
        lambda r: Reply(model_reply("stop", f"The ablation's focus is {r.ablation.focus if r.ablation else None}.")),
    ]
    with ScriptedLLMServer([]) as server:
        result, events, requests = solve_with_llm(workspace, server, replies)
        prompts = ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests]
    check_solved(workspace, result, events)
    decisions = result["llm_solve"]["decisions"]
    assert [d["action"] for d in decisions] == ["feature", "tune", "stop"]

    # A table: the fine-tuning plan holds no network, so the action is never offered.
    assert all("finetune" not in r.allowed and r.finetunable == {} for r in requests)

    # The first request has nothing to ablate; every later one has, and its record keeps what was shown.
    assert requests[0].ablation is None and decisions[0]["ablation"] is None
    second = requests[1].ablation
    assert second is not None and decisions[1]["ablation"] == second.model_dump(mode="json")
    parts = {p.part: p for p in second.parts}
    assert set(parts) == {"tuning", "features", "bagging", "blend"}
    feature = decisions[0]["feature"]
    assert feature["kept"]
    kept = parts["features"]
    assert (kept.without_model, kept.without_cv) == (feature["family"], feature["cv_before"])
    assert (kept.with_model, kept.with_cv) == (f"{feature['family']}_fe1", feature["cv_after"])
    assert kept.effect == pytest.approx(feature["cv_after"] - feature["cv_before"]) and kept.effect > 0
    # Nothing was tuned or bagged yet; the blend is an estimate from the leaders' predictions, no fit.
    assert parts["tuning"].effect is None and parts["tuning"].note == "not tuned yet"
    assert parts["tuning"].without_cv == result["cv"][parts["tuning"].without_model]
    assert parts["bagging"].effect is None
    assert parts["blend"].estimated and parts["blend"].without_model is not None
    # The focus is the largest measured gain whose action is allowed, and the prompt says so.
    gains = {p.part: p.effect for p in second.parts if p.effect is not None and p.effect > 0}
    assert second.focus == max(gains, key=lambda part: gains[part])
    assert f"Ablation: {second.why}." in prompts[1] and "Ablation:" not in prompts[0]
    # Each past action's score change, as the decision record has it.
    assert [(a.n, a.action, a.score_change) for a in second.actions] == [(1, "feature", decisions[0]["score_change"])]

    third = requests[2].ablation
    assert third is not None and [a.action for a in third.actions] == ["feature", "tune"]
    tuning = next(p for p in third.parts if p.part == "tuning")
    # Tuned after the kept block, the family read it: its untuned twin is the block's own run, or
    # (another family) not measured, never the race's run on fewer columns.
    tuned_family = decisions[1]["family"]
    assert tuning.without_model == (f"{tuned_family}_fe1" if tuned_family == feature["family"] else None)
    if any(name.endswith("_tuned") or "_tuned_bag" in name for name in result["cv"]):
        assert tuning.with_model is not None and tuning.with_cv == result["cv"][tuning.with_model]
    assert Ablation.model_validate(decisions[2]["ablation"]) == third

    # The run report shows what each later decision was shown.
    if not (workspace / "state.json").exists():
        (workspace / "state.json").write_text(json.dumps({"phase": "done"}))
    page = render_run_report(workspace)
    assert page.count("ablation: tuning ") == 2
    assert (f"focus: {second.focus}" if second.focus else second.why) in page


def test_finetune_is_offered_only_for_a_planned_network_that_fits_the_time_left() -> None:
    from solve_pipeline.phases.finetune_plan import FinetuneOption, _minilm_finetune

    planned = [FinetuneOption(_minilm_finetune(2), seconds=40.0, epochs=2)]
    assert finetunable(planned, 60.0) == {"minilm_finetune": 40.0}
    assert finetunable(planned, 30.0) == {}  # the plan's estimate no longer fits
    assert finetunable([], 600.0) == {}  # a table: the plan holds no network


@pytest.mark.integration
@pytest.mark.solo
def test_images_offer_finetune_from_the_plan_and_the_model_fine_tunes_again(tmp_path: Path) -> None:
    """Images: the fine-tuning phase's plan has a network, so `finetune` is offered with its estimate,
    and the model's choice fits it once more under its own seed, adopted only if its CV wins. (A large
    budget so that the plan's estimate surely fits; the scripted stop ends the solve early.)"""
    workspace = shapes_workspace(tmp_path / "shapes")
    settings = SolveSettings(folds=2, seed=0, time_budget_s=600, tune=False, llm_solve=True)
    (workspace / CONFIG_FILE).write_text(RunConfig(solve=settings).model_dump_json(), encoding="utf-8")
    replies = [
        lambda r: Reply(model_reply("finetune", "Fine-tuning wins most on images; a second seed helps the blend.",
                                    next(iter(r.finetunable), None))),
        lambda r: Reply(model_reply("stop", "Two fine-tuned networks are enough for this small set.")),
    ]
    with ScriptedLLMServer([]) as server:
        result, events, requests = solve_with_llm(workspace, server, replies)
    check_solved(workspace, result, events)
    assert list(requests[0].finetunable) == ["image_finetune"] and "finetune" in requests[0].allowed
    decision = result["llm_solve"]["decisions"][0]
    assert (decision["action"], decision["family"]) == ("finetune", "image_finetune")
    assert decision["outcome"].startswith("fine-tuned"), decision
    assert result["cv"]["image_finetune_llm1"] is not None and "image_finetune" in result["cv"]
    assert [d["action"] for d in result["llm_solve"]["decisions"]] == ["finetune", "stop"]
