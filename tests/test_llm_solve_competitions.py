"""The LLM solve policy end to end on shared competitions (issue #27's "done when"): `agentk run
--llm URL --model NAME` (the hybrid policy, whose solve the model now steers by default) on a
binary and a regression competition, with replies like a real model's: the feature code a Kaggle
competitor writes for that data first, then actions chosen from the request's own ablation. Each
run ends with a valid submission no worse than its own best expert candidate, and the decisions are
in solve_result.json and on report.html. Titanic is covered in test_llm_solve_policy.py."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLMServer
from llm_solve_helpers import MODEL, model_reply

from agentk.bench.baselines import constant_score
from agentk.core.maps import read_map
from agentk.core.metrics import get_metric
from agentk.core.records.solve_decisions import DecisionRequest
from agentk.llm.parsing import extract_json
from agentk.sources import load_competition
from solve_pipeline.llm.feature_code import check_feature_code

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
# The model decides in the window the expert's tuning and bagging would use (from the end of the
# race's survivors, 75% of the budget, to 92%): 60 s leaves it some 10 s, room for a block's checks
# and one family's CV on these tables; at 30 s a busy machine leaves it about one.
BUDGET_S = "60"

SPACESHIP_FEATURE = '''
import pandas as pd

SPEND = ["RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck"]


def add_features(train, test):
    # Cabin is deck/number/side and the id is group_member: the raw strings hide both. Passengers in
    # cryosleep spend nothing, so the total spend is a strong signal too.
    ids = pd.concat([train["id"], test["id"]]).astype(str)
    group_size = ids.str.split("_").str[0].value_counts()
    for frame in (train, test):
        cabin = frame["Cabin"].astype("string").str.split("/", expand=True).reindex(columns=[0, 1, 2])
        frame["deck"] = cabin[0]
        frame["cabin_number"] = pd.to_numeric(cabin[1], errors="coerce")
        frame["side"] = cabin[2]
        spend = frame[SPEND].apply(pd.to_numeric, errors="coerce").fillna(0.0)
        frame["total_spend"] = spend.sum(axis=1)
        frame["spends_nothing"] = (frame["total_spend"] == 0).astype(int)
        frame["group_size"] = frame["id"].astype(str).str.split("_").str[0].map(group_size).astype(float)
    return train, test
'''

HOUSE_FEATURE = '''
import pandas as pd


def _number(frame, column):
    return pd.to_numeric(frame[column], errors="coerce").fillna(0.0)


def add_features(train, test):
    # Buyers pay for the whole floor area and for how new the house was when sold; the raw columns
    # split both over several fields, which trees only add up through many splits.
    for frame in (train, test):
        frame["total_sf"] = _number(frame, "TotalBsmtSF") + _number(frame, "1stFlrSF") + _number(frame, "2ndFlrSF")
        frame["total_baths"] = (_number(frame, "FullBath") + 0.5 * _number(frame, "HalfBath")
                                + _number(frame, "BsmtFullBath") + 0.5 * _number(frame, "BsmtHalfBath"))
        frame["age_at_sale"] = _number(frame, "YrSold") - _number(frame, "YearBuilt")
        frame["years_since_remodel"] = _number(frame, "YrSold") - _number(frame, "YearRemodAdd")
        frame["quality_x_living_area"] = _number(frame, "OverallQual") * _number(frame, "GrLivArea")
    return train, test
'''

Responder = Callable[[DecisionRequest], Reply]


class SolveScriptServer(ScriptedLLMServer):
    """The scripted server, answering the solve's decision requests from what each one shows (as a
    model reads the state in its prompt); any other request (setup) takes the script's next reply."""

    def __init__(self, solve_replies: list[Responder], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.solve_replies = list(solve_replies)
        self.seen: list[DecisionRequest] = []

    def reply_for(self, body: Any) -> Reply:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        if not messages or not messages[0].get("content", "").startswith("You steer the solve phase"):
            return super().reply_for(body)
        request = DecisionRequest.model_validate({**extract_json(messages[-1]["content"]), "n": 0, "token": ""})
        self.seen.append(request)
        if not self.solve_replies:
            return Reply(model_reply("stop", "The scores have settled; blending and decoding are what is left."))
        return self.solve_replies.pop(0)(request)


def _leader(request: DecisionRequest, among: list[str]) -> str:
    scored = [f for f in request.race if f.family in among and f.cv is not None]
    higher = request.task.higher_is_better
    return max(scored, key=lambda f: f.cv if higher else -f.cv).family if scored else among[0]  # type: ignore[operator]


def _follow_the_ablation(request: DecisionRequest) -> Reply:
    """What a model does with the ablation: work on its focus, else the part not measured yet."""
    ablation, allowed = request.ablation, request.allowed
    focus = ablation.focus if ablation is not None else None
    why = ablation.why if ablation is not None else "no ablation yet"
    if focus == "blend" and "blend" in allowed:
        return Reply(model_reply("blend", f"The ablation says {why}; averaging the leaders pays most."))
    if "tune" in allowed and request.tunable:
        family = _leader(request, request.tunable)
        return Reply(model_reply("tune", f"The ablation says {why}; the leader {family} has never been tuned.", family))
    if "bag" in allowed:
        return Reply(model_reply("bag", f"The ablation says {why}; fresh partitions lower the variance."))
    return Reply(model_reply("stop", f"The ablation says {why}; nothing allowed would help more."))


def _run(competition: str, code: str, reason: str, tmp_path: Path) -> tuple[Path, dict, dict, str, SolveScriptServer]:
    replies: list[Responder] = [
        lambda r: Reply(model_reply("feature", reason, code=code)) if "feature" in r.allowed else _follow_the_ablation(r),
        _follow_the_ablation,
        lambda r: Reply(model_reply("blend" if "blend" in r.allowed else "stop", "Several diverse models are finished.")),
    ]
    with SolveScriptServer(replies) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "agentk.cli", "run", str(SHARED / competition), "-w", str(tmp_path / "ws"),
             "--llm", server.base_url, "--model", MODEL, "--time-budget", BUDGET_S, "--folds", "3", "--json"],
            capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    workspace = tmp_path / "ws" / result["competition_id"]
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    return workspace, result, solve, (workspace / "report.html").read_text(), server


def _passes_on_the_runs_own_maps(workspace: Path, code: str, columns: list[str]) -> None:
    """The code, run on the very maps the run's setup wrote (train with its raw target), passes every
    check with a generous cap: in the run itself a loaded machine may leave its window too short."""
    setup = workspace / "setup"
    targets = read_map(setup / "train_tab_target_map.csv")
    train = read_map(setup / "train_tab_input_map.csv").merge(targets, on="id")
    verdict = check_feature_code(code, train, read_map(setup / "test_tab_input_map.csv"),
                                 [c for c in targets.columns if c != "id"], 120.0)
    assert verdict.refused is None and set(verdict.checks.values()) == {"passed"}, verdict.checks
    assert verdict.block is not None and list(verdict.block.train.columns) == columns
    assert verdict.block.train.notna().any().all()  # every new column holds values on the real rows


def _solved(workspace: Path, competition: str) -> None:
    """What test_end_to_end's assert_solved checks of its runs (these are the only end-to-end runs
    on these two competitions): every stage passed, the graded score beats the best constant by a
    clear margin, and the agent's workspace holds no grading facts or answers."""
    result = json.loads((workspace / "result.json").read_text())
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    assert all(meta["passed"] for meta in result["meta"].values()), result["meta"]
    constant, score = constant_score(load_competition(SHARED / competition)), result["test_score"]
    assert score is not None and constant is not None
    if get_metric(result["test_metric"]).higher_is_better:
        assert score >= constant + 0.1, (score, constant)
    else:
        assert score <= 0.8 * constant, (score, constant)
    assert not list(workspace.rglob("competition.toml")) and not list(workspace.rglob("answers.csv"))


def _check(workspace: Path, code: str, result: dict, solve: dict, page: str, server: SolveScriptServer,
           columns: list[str]) -> None:
    assert result["valid_submission"] and result["policy"] == "hybrid"
    _solved(workspace, result["competition_id"])
    # The model steered the solve without being asked to (--llm-solve is the default with an LLM).
    decisions = solve["llm_solve"]["decisions"]
    assert decisions and server.seen
    first = decisions[0]
    assert first["source"] == "llm" and first["tokens"] > 0
    _passes_on_the_runs_own_maps(workspace, code, columns)
    # In the run (offered while the window holds the code cap's floor): judged by CV, or cut off by the
    # time left; never refused for anything in the code.
    if first["action"] == "feature" and first["feature"]["verdict"] != "refused: timed out":
        feature = first["feature"]
        checks = feature["checks"]
        assert {checks[name] for name in ("time", "runs", "rows", "columns", "deterministic", "leakage")} == {"passed"}
        assert feature["columns"] == columns and feature["verdict"].startswith(("kept", "dropped"))
    # A later request showed the ablation, and the model's next step came from it.
    if len(server.seen) > 1:
        assert server.seen[1].ablation is not None and decisions[1]["ablation"] is not None
    # Never worse than the expert: the submission's score is at least the best of the race's own
    # models, unless the choice rule took a candidate within noise of that leader (and said so).
    race = {entry["family"] for entry in solve["race"]} | {"constant"}
    expert = [c["validation_score"] for c in solve["candidates"] if c["model"] in race and c["validation_score"] is not None]
    best = max(expert) if solve["higher_is_better"] else min(expert)
    choice = solve["choice"]
    if choice.get("applied") == "within_noise" and choice["chosen"] != choice["leader"]:
        assert solve["model"].startswith(choice["chosen"])
        assert any(m["name"] == choice["chosen"] and m["within"] for m in choice["margins"]), choice
    else:
        assert (solve["validation_score"] >= best) if solve["higher_is_better"] else (solve["validation_score"] <= best)
    # The report shows the decisions, the feature code among them.
    assert 'id="llm-solve"' in page and html.escape(first["reason"]) in page
    if first["action"] == "feature":
        assert columns[0] in page  # its code


def test_spaceship_titanic_with_cabin_and_spend_features(tmp_path: Path) -> None:
    reason = "Cabin packs deck, number and side; the id packs the travel group; spend separates cryosleepers."
    workspace, result, solve, page, server = _run("spaceship-titanic", SPACESHIP_FEATURE, reason, tmp_path)
    _check(workspace, SPACESHIP_FEATURE, result, solve, page, server,
           ["deck", "cabin_number", "side", "total_spend", "spends_nothing", "group_size"])
    assert result["metric"] == "accuracy" and result["test_score"] > 0.7


def test_house_prices_with_area_and_age_features(tmp_path: Path) -> None:
    reason = "Price follows total floor area, bathrooms and the age of the house at sale, split over raw columns."
    workspace, result, solve, page, server = _run("house-prices-advanced-regression-techniques", HOUSE_FEATURE, reason,
                                                  tmp_path)
    _check(workspace, HOUSE_FEATURE, result, solve, page, server,
           ["total_sf", "total_baths", "age_at_sale", "years_since_remodel", "quality_x_living_area"])
    assert not solve["higher_is_better"] and result["test_score"] < 0.2
