"""The campaign report: built from real campaign records (CampaignFolder.save, decisions lines,
result.json / solve_result.json / attempts.jsonl in real workspace folders), rendered to a real page."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tiny_campaign import TinyCampaign

from agentk.campaign.driver import CampaignDriver
from agentk.campaign.options import CampaignOptions
from agentk.campaign.state import CampaignFolder, CampaignState, TaskAttempt, TaskState, TaskStatus
from agentk.campaign.status import render_status
from agentk.core.records.events import EventLog
from agentk.core.records.results import MetaRecord, RunResult, SolveResult, StageRecord
from agentk.core.records.workspace import atomic_write_json
from agentk.report import campaign_data
from agentk.report.campaign_data import (
    order_curves,
    pass_at_k,
    read_decisions,
    stage_rates,
    task_row,
    task_workspace,
)
from agentk.report.campaign_figures import choice_difficulty, task_setup_bars, task_setup_frame
from agentk.report.campaign_report import campaign_context, write_campaign_report
from agentk.report.elo import EloRating, Round, elo_mmr, standings
from agentk.report.medals import bracket, count_medals, medal_for
from agentk.report.page import REPORT_FILE, NotAvailable, figure, fmt

START = datetime(2026, 1, 1, tzinfo=UTC)
STAGES = ("summarise", "modalities", "plan", "train_input_map_tab", "metric")

pytest_plugins = ["tiny_campaign"]


# ---------------------------------------------------------------- building a campaign folder


def stage_lines(failures: dict[str, int] | None = None, stop_at: str | None = None) -> list[dict]:
    """attempts.jsonl lines: each stage fails `failures[stage]` times, then passes (or, at
    `stop_at`, never passes)."""
    lines = []
    for stage in STAGES:
        for attempt in range((failures or {}).get(stage, 0)):
            lines.append({"kind": "stage", "stage": stage, "attempt": attempt + 1, "passed": False,
                          "declined": False, "problems": ["too short"], "content": "x" * 200})
        if stage == stop_at:
            return lines
        lines.append({"kind": "stage", "stage": stage, "attempt": 1, "passed": True, "declined": False, "problems": []})
    lines.append({"kind": "meta", "stage": "meta_maps", "attempt": 1, "passed": True, "problems": []})
    return lines


def write_workspace(ws: Path, *, solved: bool, validation: float | None = None, test: float | None = None,
                    higher: bool = True, lines: list[dict] | None = None, kaggle: dict | None = None,
                    modalities: tuple[str, ...] = ("tabular",), report: bool = False) -> None:
    (ws / "logs").mkdir(parents=True, exist_ok=True)
    (ws / "setup").mkdir(parents=True, exist_ok=True)
    (ws / "solve").mkdir(parents=True, exist_ok=True)
    atomic_write_json(ws / "setup" / "modalities.json", {"input_modalities": list(modalities), "target_modality": "tabular"})
    failed_stage = next((line["stage"] for line in reversed(lines or []) if not line["passed"]), None) if not solved else None
    setup = {s: StageRecord(attempts=1, passed=True) for s in STAGES}
    if failed_stage:
        setup = {s: StageRecord(attempts=1, passed=True) for s in STAGES[:STAGES.index(failed_stage)]}
        setup[failed_stage] = StageRecord(attempts=3, passed=False)
    result = RunResult(competition_id=ws.name, valid_submission=solved, metric="accuracy", higher_is_better=higher,
                       validation_score=validation, test_score=test, model="lightgbm" if solved else None,
                       setup=setup, meta={"meta_maps": MetaRecord(rounds=1, passed=True)} if solved else {},
                       phase="done" if solved else "setup", elapsed_s=12.0,
                       error=None if solved else f"setup stage {failed_stage!r} failed after 3 attempts")
    data = result.to_json()
    if kaggle is not None:
        data["kaggle"] = kaggle
    atomic_write_json(ws / "result.json", data)
    atomic_write_json(ws / "solve" / SolveResult.FILE, SolveResult(validation_score=validation, model="lightgbm",
                                                                   higher_is_better=higher, metric="setup").to_json())
    if lines is not None:
        (ws / "logs" / "attempts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if report:
        (ws / REPORT_FILE).write_text("<html>the run's page</html>")


def attempt(round_: int, ok: bool | None, minutes: float, *, validation: float | None = None, test: float | None = None,
            tokens: int = 0, elapsed: float = 30.0) -> TaskAttempt:
    return TaskAttempt(round=round_, started=START + timedelta(minutes=minutes), ok=ok, validation_score=validation,
                   test_score=test, elapsed_s=elapsed if ok is not None else None, tokens=tokens,
                   error=None if ok in (None, True) else "setup stage 'summarise' failed after 3 attempts")


def decision(round_: int, chosen: str, pool: list[tuple[str, float]], order: str = "curriculum") -> dict:
    terms = {"positive_description": 0.61, "positive_tree": 0.42, "negative_description": -0.13,
             "negative_tree": -0.07, "recent_failure": -0.0} if order == "curriculum" and round_ > 1 else {}
    ranking = [{"task_id": key, "position": i, "complexity": c, "score": 0.8 - 0.1 * i if terms else None,
                "terms": terms, "rank": i} for i, (key, c) in enumerate(pool)]
    return {"time": (START + timedelta(minutes=round_)).isoformat(), "round": round_, "chosen": chosen, "order": order,
            "score": 0.83 if terms else None, "terms": terms, "reason": f"{order}: round {round_}", "ranking": ranking,
            "memory": {"positive": round_ - 1, "negative": 0}}


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    """Three tasks: one solved with a leaderboard file beside its source and a run report, one that
    gave up in setup after two runs, one never run."""
    root = tmp_path / "camp"
    folder = CampaignFolder(root)
    folder.create()
    sources = tmp_path / "sources"
    for key in ("alpha", "beta", "gamma"):
        (sources / key).mkdir(parents=True)
    # 20 teams scoring 0.60 .. 0.79: agentk's test score 0.785 beats 19 of them.
    teams = [f"team{i}" for i in range(20)]
    (sources / "alpha" / "leaderboard.csv").write_text(
        "TeamId,TeamName,Score\n" + "".join(f"{i},{name},{0.60 + 0.01 * i:.2f}\n" for i, name in enumerate(teams)))
    write_workspace(folder.workspaces / "alpha", solved=True, validation=0.81, test=0.785, report=True,
                    lines=stage_lines({"plan": 1}))
    write_workspace(folder.workspaces / "beta", solved=False, lines=stage_lines({"summarise": 3}, stop_at="summarise")
                    + stage_lines({"summarise": 3}, stop_at="summarise"), modalities=("text",))
    state = CampaignState(
        name="unit", created=START, specs=[str(sources)], options={"order": "curriculum"}, round=3,
        elapsed_s=180.0, tokens=1500,
        tasks={
            "beta": TaskState(key="beta", source=str(sources / "beta"), kind="folder", workspace=str(folder.workspaces / "beta"),
                              complexity=9.5, status=TaskStatus.GAVE_UP,
                              attempts=[attempt(1, False, 0, tokens=200), attempt(3, False, 2, tokens=300)]),
            "alpha": TaskState(key="alpha", source=str(sources / "alpha"), kind="folder", workspace=str(folder.workspaces / "alpha"),
                               complexity=8.0, status=TaskStatus.SOLVED,
                               attempts=[attempt(2, True, 1, validation=0.81, test=0.785, tokens=1000, elapsed=45.0)]),
            "gamma": TaskState(key="gamma", source=str(sources / "gamma"), kind="folder", complexity=7.0),
        })
    folder.save(state)
    pool = [("beta", 9.5), ("alpha", 8.0), ("gamma", 7.0)]
    folder.log_decision(decision(1, "beta", pool))
    folder.log_decision(decision(2, "alpha", [("alpha", 8.0), ("gamma", 7.0), ("beta", 9.5)]))
    folder.log_decision(decision(3, "beta", [("beta", 9.5), ("gamma", 7.0)]))
    with folder.decisions_path.open("a") as out:
        out.write('{"round": 4, "chosen": "gam')  # a line torn by a kill
    return root


def rows_of(root: Path) -> dict[str, campaign_data.TaskRow]:
    state = CampaignState.read(root)
    assert state is not None
    return {key: task_row(root, task)[0] for key, task in state.tasks.items()}


# ---------------------------------------------------------------- medals


@pytest.mark.parametrize(("n_teams", "gold", "silver", "bronze"), [
    (1, 1, 1, 1),        # 0–99: top 10% / 20% / 40%, at least one place each
    (10, 1, 2, 4),
    (99, 9, 19, 39),
    (100, 10, 20, 40),   # 100–249: top 10 / 20% / 40%
    (249, 10, 49, 99),
    (250, 10, 50, 100),  # 250–999: top 10 + 0.2% / 50 / 100
    (999, 11, 50, 100),
    (1000, 12, 50, 100),  # 1000+: top 10 + 0.2% / 5% / 10%
    (5000, 20, 250, 500),
])
def test_medals_follow_kaggles_progression_rules_at_each_brackets_boundaries(n_teams: int, gold: int, silver: int, bronze: int) -> None:
    assert medal_for(gold, n_teams) == "gold"
    assert medal_for(silver, n_teams) == ("gold" if silver == gold else "silver")
    assert medal_for(bronze, n_teams) in ({"gold", "silver", "bronze"} if bronze <= silver else {"bronze"})
    if gold < n_teams:
        assert medal_for(gold + 1, n_teams) != "gold"
    if silver < n_teams:
        assert medal_for(silver + 1, n_teams) in ("bronze", None)
    if bronze < n_teams:
        assert medal_for(bronze + 1, n_teams) is None


def test_brackets_and_medal_counts() -> None:
    assert [bracket(n) for n in (99, 100, 249, 250, 999, 1000)] == [
        "0–99 teams", "100–249 teams", "100–249 teams", "250–999 teams", "250–999 teams", "1000+ teams"]
    counts = count_medals(["gold", None, "bronze", "gold", "silver", None])
    assert (counts.gold, counts.silver, counts.bronze, counts.none, counts.placed, counts.medals) == (2, 1, 1, 2, 6, 4)
    with pytest.raises(ValueError):
        medal_for(0, 10)


# ---------------------------------------------------------------- Elo-MMR


def test_standings_put_ties_in_one_interval_and_follow_the_direction() -> None:
    up = standings(Round("a", ["x", "y", "z"], [0.9, 0.7, 0.7], ours=0.7, higher_is_better=True))
    assert up == [("x", 0, 0), ("y", 1, 3), ("z", 1, 3), ("agentk", 1, 3)]
    down = standings(Round("b", ["x", "y", "agentk"], [0.1, 0.3, 0.5], ours=0.2, higher_is_better=False))
    assert down == [("x", 0, 0), ("agentk", 1, 1), ("y", 2, 2), ("agentk (a team)", 3, 3)]


def test_elo_mmr_rates_a_winner_above_the_teams_and_says_why_without_leaderboards() -> None:
    teams = [f"t{i}" for i in range(30)]
    rounds = [Round(f"c{k}", teams, [0.5 + 0.01 * i for i in range(30)], ours=0.95, higher_is_better=True) for k in range(3)]
    elo = elo_mmr(rounds)
    assert isinstance(elo, EloRating)
    assert elo.rounds == 3 and len(elo.history) == 3 and len(elo.others) == 30
    assert elo.percentile == 1.0 and elo.rating > max(elo.others)
    assert [h.place for h in elo.history] == [0, 0, 0]
    assert elo.history[-1].rating > elo.history[0].rating  # three wins rate higher than one

    loser = elo_mmr([Round("c", teams, [0.5 + 0.01 * i for i in range(30)], ours=0.1, higher_is_better=True)])
    assert isinstance(loser, EloRating) and loser.percentile == 0.0

    missing = elo_mmr([])
    assert isinstance(missing, NotAvailable) and "no leaderboard" in missing.reason


# ---------------------------------------------------------------- the task table


def test_task_rows_read_the_state_and_each_workspace(campaign: Path) -> None:
    rows = rows_of(campaign)
    alpha, beta, gamma = rows["alpha"], rows["beta"], rows["gamma"]

    assert (alpha.status, alpha.setup, alpha.setup_ok, alpha.attempts, alpha.taken) == ("solved", "passed", True, 1, 2)
    assert (alpha.validation_score, alpha.test_score, alpha.metric, alpha.higher_is_better) == (0.81, 0.785, "accuracy", True)
    # 0.785 beats 0.60 .. 0.78 (19 of 20 teams): rank 2 of 20, top 10% of 20 teams is 2: gold.
    assert (alpha.leaderboard_score, alpha.rank, alpha.n_teams, alpha.medal) == (0.785, 2, 20, "gold")
    assert alpha.percentile == pytest.approx(19 / 20)
    assert alpha.leaderboard_from == "test score on the leaderboard file"
    assert (alpha.elapsed_s, alpha.tokens, alpha.modality) == (45.0, 1000, "tabular")
    assert alpha.report == "workspaces/alpha/report.html"

    assert (beta.status, beta.setup, beta.setup_ok, beta.attempts, beta.taken) == ("gave_up", "failed at summarise", False, 2, 1)
    assert beta.rank is None and beta.medal is None and beta.report is None
    assert (beta.elapsed_s, beta.tokens, beta.modality, beta.family, beta.seed) == (60.0, 500, "text", "beta", None)
    assert "summarise" in (beta.note or "")

    assert (gamma.status, gamma.setup, gamma.attempts, gamma.taken, gamma.elapsed_s) == ("pending", "not run", 0, None, None)


def test_a_kaggle_place_from_result_json_comes_first(campaign: Path) -> None:
    ws = campaign / "workspaces" / "alpha"
    data = json.loads((ws / "result.json").read_text())
    data["kaggle"] = {"best_public": 0.7, "leaderboard": {"rank": 12, "n_teams": 300, "percentile": 0.96, "medal": None}}
    (ws / "result.json").write_text(json.dumps(data))
    alpha = rows_of(campaign)["alpha"]
    assert (alpha.leaderboard_score, alpha.rank, alpha.n_teams, alpha.percentile, alpha.medal) == (0.7, 12, 300, 0.96, None)
    assert alpha.leaderboard_from == "Kaggle (public score)"


def test_setup_success_rates_per_stage_and_per_task(campaign: Path) -> None:
    rows = rows_of(campaign)
    rates = {r.stage: (r.passed, r.runs) for r in stage_rates(list(rows.values()))}
    # alpha: every stage once, plan after one failure; beta: two runs of summarise failing 3 times each.
    assert rates["summarise"] == (1, 7)
    assert rates["plan"] == (1, 2)
    assert rates["modalities"] == (1, 1) and rates["meta_maps"] == (1, 1)
    assert rows["alpha"].setup_rate == pytest.approx(6 / 7)
    assert rows["beta"].setup_rate == 0.0
    assert rows["gamma"].setup_rate is None

    # Without attempts.jsonl the counts come from result.json.
    (campaign / "workspaces" / "alpha" / "logs" / "attempts.jsonl").unlink()
    alpha = rows_of(campaign)["alpha"]
    assert alpha.stage_runs["plan"].runs == 1 and alpha.stage_runs["meta_maps"].passed == 1
    assert alpha.setup_rate == 1.0


def seeded_rows(modality: str, family: str, outcomes: list[bool | None]) -> list[campaign_data.TaskRow]:
    return [campaign_data.TaskRow(key=f"{family}-seed{i + 1}", family=family, seed=i + 1, status="solved" if ok else "failed",
                                  modality=modality, first_setup_ok=ok) for i, ok in enumerate(outcomes)]


def test_pass_at_k_is_the_unbiased_estimate_over_seeds_averaged_per_modality() -> None:
    rows = (seeded_rows("tabular", "a", [True, False, False, True])  # n=4, c=2
            + seeded_rows("tabular", "b", [False, False, False, False])  # n=4, c=0
            + seeded_rows("image", "c", [False, True, None]))  # the third seed has not finished
    table = {p.modality: p for p in pass_at_k(rows, ks=(1, 3, 10))}
    tabular, image = table["tabular"], table["image"]
    assert (tabular.tasks, tabular.seeds, tabular.passed, tabular.runs) == (2, 4, 2, 8)
    assert tabular.at[1] == pytest.approx((0.5 + 0.0) / 2)
    assert tabular.at[3] == pytest.approx((1.0 + 0.0) / 2)  # two failures cannot fill three draws
    assert tabular.at[10] is None  # ten draws from four seeds: not estimated
    assert (image.seeds, image.at[1], image.at[3]) == (2, 0.5, None)


def test_pass_at_k_needs_seeds_and_says_how(campaign: Path) -> None:
    rows = list(rows_of(campaign).values())  # beta ran twice, but retries are not seeds
    missing = pass_at_k(rows)
    assert isinstance(missing, NotAvailable) and "--seeds 3" in missing.reason


def test_the_choices_keep_their_terms_and_skip_a_torn_line(campaign: Path) -> None:
    decisions = read_decisions(campaign)
    assert [d.chosen for d in decisions] == ["beta", "alpha", "beta"]
    assert decisions[1].terms["positive_description"] == 0.61 and decisions[1].terms["negative_tree"] == -0.07
    assert decisions[1].complexity == 8.0 and decisions[1].candidates == 3
    assert decisions[0].terms == {}


def test_the_failing_stage_is_the_one_that_ran_and_failed(campaign: Path) -> None:
    # As the runner writes it when summarise fails: the stage after it is listed, never attempted.
    ws = campaign / "workspaces" / "beta"
    data = json.loads((ws / "result.json").read_text())
    data["setup"] = {"modalities": {"attempts": 0, "passed": False}, "summarise": {"attempts": 6, "passed": False}}
    data["error"] = "setup stage 'summarise' failed after 3 attempts: task_summary.md is too short"
    (ws / "result.json").write_text(json.dumps(data))
    assert rows_of(campaign)["beta"].setup == "failed at summarise"

    # Without an error naming it, the first stage that ran and did not pass.
    data["error"] = None
    data["setup"] = {"modalities": {"attempts": 0, "passed": False}, "summarise": {"attempts": 1, "passed": True},
                     "plan": {"attempts": 3, "passed": False}}
    (ws / "result.json").write_text(json.dumps(data))
    assert rows_of(campaign)["beta"].setup == "failed at plan"

    # A meta check named by the error is the failing stage, though every stage passed.
    data["setup"] = {name: {"attempts": 1, "passed": True} for name in STAGES}
    data["meta"] = {"meta_maps": {"rounds": 2, "passed": False}}
    data["error"] = "meta check 'meta_maps' failed after 2 rounds: ids differ"
    (ws / "result.json").write_text(json.dumps(data))
    assert rows_of(campaign)["beta"].setup == "failed at meta_maps"

    # A run that handed in the sample after the failure keeps it as setup_failure, not as error;
    # the step it names wins over the first failed record, as the error's does.
    data.update(error=None, setup_failure=data["error"], valid_submission=True, phase="done", model="sample_submission")
    data["setup"]["plan"] = {"attempts": 4, "passed": False}
    (ws / "result.json").write_text(json.dumps(data))
    assert rows_of(campaign)["beta"].setup == "failed at meta_maps"


def test_figure_13_shows_a_task_whose_every_setup_test_failed(campaign: Path) -> None:
    rows = list(rows_of(campaign).values())
    frame = task_setup_frame(rows).set_index("task")
    assert list(frame.index) == ["beta", "alpha"]  # gamma never ran its setup
    assert frame.loc["beta", "rate"] == 0.0 and frame.loc["beta", "bar"] > 0  # a stub, not nothing
    assert (frame.loc["beta", "setup"], frame.loc["beta", "runs"]) == ("failed", "0/6")
    assert frame.loc["alpha", "rate"] == pytest.approx(100 * 6 / 7) and frame.loc["alpha", "bar"] == frame.loc["alpha", "rate"]
    assert frame.loc["alpha", "runs"] == "6/7"
    drawn = figure("13", task_setup_bars(rows))
    assert drawn.missing is None and ">0/6<" in drawn.svg and ">failed<" in drawn.svg  # its label and the legend


def test_numbers_never_print_a_negative_zero() -> None:
    assert fmt(-0.0) == "0" and fmt(0.0) == "0"
    assert fmt(-0.0012, 2) == "0"  # rounded to zero
    assert fmt(-0.0012) == "-0.0012" and fmt(-0.5) == "-0.5" and fmt(-1e6) == "-1e+06"
    assert fmt(None) == "—" and fmt(1234) == "1,234"


def test_a_moved_campaign_reads_and_links_its_own_workspaces(campaign: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(campaign, tmp_path / "elsewhere" / "camp")
    # The original still exists: the copy reads its own workspaces, not the ones its state names.
    result = copy / "workspaces" / "alpha" / "result.json"
    result.write_text(result.read_text().replace("0.785", "0.7"))
    alpha = rows_of(copy)["alpha"]
    assert alpha.test_score == 0.7 and alpha.report == "workspaces/alpha/report.html"

    shutil.rmtree(campaign)  # and once the original is gone
    rows = rows_of(copy)
    assert rows["alpha"].report == "workspaces/alpha/report.html" and rows["alpha"].setup == "passed"
    assert rows["beta"].setup == "failed at summarise" and rows["beta"].modality == "text"
    html = write_campaign_report(copy).read_text()
    assert 'href="workspaces/alpha/report.html"' in html
    assert str(campaign) not in html.replace(str(copy), "")


def test_a_workspace_outside_the_campaign_is_kept_when_the_campaign_has_none(campaign: Path, tmp_path: Path) -> None:
    outside = shutil.copytree(campaign / "workspaces" / "alpha", tmp_path / "outside" / "alpha-ws")
    shutil.rmtree(campaign / "workspaces" / "alpha")
    state = CampaignState.read(campaign)
    assert state is not None
    task = state.tasks["alpha"].model_copy(update={"workspace": str(outside)})
    assert task_workspace(campaign, task) == outside
    row, _ = task_row(campaign, task)
    assert row.report == os.path.relpath(outside / REPORT_FILE, campaign) and row.test_score == 0.785


def test_the_header_and_the_round_axes(campaign: Path) -> None:
    html = write_campaign_report(campaign).read_text()
    assert "started 2026-01-01 00:00 UTC" in html
    decisions = read_decisions(campaign)
    axis = choice_difficulty(decisions).to_dict()["encoding"]["x"]["axis"]
    assert axis["values"] == [1, 2, 3] and axis["format"] == "d"  # no half rounds
    assert choice_difficulty(decisions).to_dict()["mark"]["point"]["color"] == choice_difficulty(decisions).to_dict()["mark"]["color"]


def test_the_task_table_leaves_out_columns_no_task_fills(campaign: Path, tmp_path: Path) -> None:
    html = write_campaign_report(campaign).read_text()
    assert ">place<" in html and ">medal<" in html and ">tokens<" in html
    (tmp_path / "sources" / "alpha" / "leaderboard.csv").unlink()
    html = write_campaign_report(campaign).read_text()
    table = html[html.index('<table class="tasks">'):]
    table = table[:table.index("</table>")]
    assert ">place<" not in table and ">medal<" not in table and "leader&shy;board" not in table
    assert ">tokens<" in table  # beta and alpha spent tokens
    assert "the leaderboard, place and medal columns are left out" in html


# ---------------------------------------------------------------- the page


def test_the_page_shows_every_section(campaign: Path) -> None:
    path = write_campaign_report(campaign)
    assert path == campaign / REPORT_FILE
    html = path.read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    for text in ("Campaign unit", "failed at summarise", "gave_up", 'href="workspaces/alpha/report.html"',
                 "2/20", "beats 95.0%", "gold", "0.785", "+ description", "0.61", "−0.07".replace("−", "-"),
                 "Figure 8", "Figure 9", "Figure 12", "Figure 13", "Table 4", "curriculum: round 2"):
        assert text in html, text
    # Figures 8, 9 (two), 12, 13, the medal bars and the choices are drawn; Figure 14 is not available.
    assert html.count("<svg") == 7
    assert "not available: this campaign was not run by `agentk bench --campaign`" in html
    # The task table follows the order the tasks were taken in.
    assert html.index(">beta<") < html.index(">alpha<") < html.index(">gamma<")


def test_without_leaderboards_figures_8_and_9_say_why(campaign: Path, tmp_path: Path) -> None:
    (tmp_path / "sources" / "alpha" / "leaderboard.csv").unlink()
    context = campaign_context(campaign)
    assert isinstance(context["elo"], NotAvailable) and "no leaderboard" in context["elo"].reason
    assert context["fig8"].missing is not None and context["medals"] is None
    html = write_campaign_report(campaign).read_text()
    assert "not available: no leaderboard is known" in html
    assert "not available: no task was placed on a leaderboard" in html


def test_a_broken_record_costs_only_its_own_piece(campaign: Path) -> None:
    ws = campaign / "workspaces" / "alpha"
    (ws / "result.json").write_text(json.dumps({"competition_id": "alpha", "setup": {"plan": {"attempts": "many"}}}))
    (campaign / "workspaces" / "beta" / "setup" / "modalities.json").write_text("{not json")
    html = write_campaign_report(campaign).read_text()
    assert ">alpha<" in html and ">beta<" in html and "Figure 12" in html
    assert "unknown" in html  # beta's modality


def test_a_folder_without_a_campaign_is_one_clear_error(tmp_path: Path) -> None:
    from agentk.core.errors import AgentKError

    with pytest.raises(AgentKError, match="no campaign"):
        write_campaign_report(tmp_path)


def test_figure_14_reads_the_sibling_campaigns_of_a_bench(campaign: Path, tmp_path: Path) -> None:
    bench = tmp_path / "ws" / "campaign-bench"
    bench.mkdir(parents=True)
    fixed = bench / "fixed"
    campaign.rename(fixed)
    other = CampaignFolder(bench / "random")
    state = CampaignState(name="r", created=START, options={"order": "random"}, elapsed_s=100.0, tokens=0, tasks={
        "alpha": TaskState(key="alpha", source="x", kind="folder", status=TaskStatus.SOLVED,
                           attempts=[attempt(1, True, 0, elapsed=20.0)])})
    other.create()
    other.save(state)
    curves = order_curves(fixed)
    assert not isinstance(curves, NotAvailable) and [c.order for c in curves.orders] == ["fixed", "random"]
    assert curves.this == "fixed"
    mine, theirs = curves.orders
    # beta failed at 0.5 min, alpha solved at 1 min + 45 s, beta failed again at 2.5 min.
    assert mine.successes_vs_time == [(0.0, 0), (30.0, 0), (105.0, 1), (150.0, 1)]
    assert mine.successes_vs_tokens == [(0, 0), (200, 0), (1200, 1), (1500, 1)]
    assert theirs.successes_vs_time == [(0.0, 0), (20.0, 1)]
    html = write_campaign_report(fixed).read_text()
    assert "fixed (this campaign)" in html and "random" in html
    assert "not available: no order spent any LLM tokens" not in html  # this campaign spent tokens

    # The bench's own record (bench.json, as `agentk bench --campaign` writes it) comes first; its
    # cold run is not an order.
    rows = [{"order": order, "pool": 3, "solved": 1, "runs": 3, "to_last_success_s": 99.0, "total_s": 180.0,
             "tokens": 1500, "successes_vs_time": [[0.0, 0], [99.0 + i, 1]], "successes_vs_tokens": [[0, 0], [1500, 1]]}
            for i, order in enumerate(("fixed", "random"))]
    folders = {"fixed": str(fixed), "random": str(bench / "random"), "curriculum-cold": str(bench / "curriculum-cold")}
    (bench / "bench.json").write_text(json.dumps({"pool": ["alpha"], "folders": folders, "orders": rows}))
    from_json = order_curves(fixed)
    assert not isinstance(from_json, NotAvailable) and from_json.this == "fixed"
    assert [c.successes_vs_time for c in from_json.orders] == [[(0.0, 0), (99.0, 1)], [(0.0, 0), (100.0, 1)]]


# ---------------------------------------------------------------- size and speed


def big_campaign(root: Path, n: int = 100, teams: int = 200) -> Path:
    folder = CampaignFolder(root)
    folder.create()
    tasks = {}
    pool = [(f"task-{i:03d}", 5.0 + (i % 17) / 3) for i in range(n)]
    for i, (key, complexity) in enumerate(pool):
        ws = folder.workspaces / key
        solved = i % 5 != 0
        write_workspace(ws, solved=solved, validation=0.7 + (i % 10) / 50 if solved else None,
                        test=0.68 + (i % 10) / 50 if solved else None, lines=stage_lines({"plan": i % 3}, None if solved else "plan"),
                        modalities=(("tabular",), ("text",), ("image", "tabular"))[i % 3])
        if solved:
            (ws / "submissions").mkdir(exist_ok=True)
            board = "TeamName,Score\n" + "".join(f"team{(j * 7 + i) % 400},{0.6 + 0.3 * j / teams:.4f}\n" for j in range(teams))
            (root / "sources" / key).mkdir(parents=True, exist_ok=True)
            (root / "sources" / key / "leaderboard.csv").write_text(board)
        tasks[key] = TaskState(key=key, source=str(root / "sources" / key), kind="folder", workspace=str(ws), complexity=complexity,
                               status=TaskStatus.SOLVED if solved else TaskStatus.GAVE_UP,
                               attempts=[attempt(i + 1, solved, i, validation=0.7 if solved else None, tokens=100)])
        folder.log_decision(decision(i + 1, key, pool[i:]))
    folder.save(CampaignState(name="big", created=START, options={"order": "curriculum"}, round=n, elapsed_s=n * 60.0,
                              tokens=n * 100, tasks=tasks))
    return root


def test_a_hundred_task_campaign_page_stays_small(tmp_path: Path) -> None:
    # How fast it renders and opens is measured by hand (the closing note), never asserted here.
    root = big_campaign(tmp_path / "big")
    path = write_campaign_report(root)
    html = path.read_text()
    assert path.stat().st_size < 1_500_000
    assert html.count("<svg") == 7  # no Figure 14: a single campaign
    assert len(re.findall(r">task-\d{3}<", html)) >= 100
    assert "agentk rates" in html  # Elo-MMR over the 80 leaderboards


# ---------------------------------------------------------------- the driver's and status's hooks


def test_the_driver_refreshes_the_report_and_a_failure_is_only_an_event(campaign: Path, tmp_path: Path) -> None:
    events_path = tmp_path / "events.jsonl"
    driver = CampaignDriver(CampaignFolder(campaign), CampaignOptions(), EventLog(events_path, quiet=True))
    driver._refresh_report()
    assert (campaign / REPORT_FILE).is_file()

    empty = tmp_path / "empty"
    empty.mkdir()
    CampaignDriver(CampaignFolder(empty), CampaignOptions(), EventLog(events_path, quiet=True))._refresh_report()
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    assert [e["event"] for e in events] == ["campaign_report", "campaign_report_failed"]
    assert "no campaign" in events[1]["reason"]


def test_status_names_the_report_once_it_exists(campaign: Path) -> None:
    from rich.console import Console

    folder = CampaignFolder(campaign)
    state = folder.load()
    assert state is not None

    def shown() -> str:
        console = Console(record=True, width=200)
        console.print(render_status(folder, state, "nothing: every task has ended"))
        return console.export_text()

    assert "report:" not in shown()
    write_campaign_report(campaign)
    assert f"report: {campaign / REPORT_FILE}" in shown()


@pytest.mark.integration
def test_a_real_campaign_leaves_its_report(tiny_campaign: TinyCampaign) -> None:
    campaign_dir = tiny_campaign.folder
    report = campaign_dir / REPORT_FILE
    assert f"report: {report}" in tiny_campaign.resume.stdout + tiny_campaign.resume.stderr
    html = report.read_text()
    for key in json.loads((campaign_dir / "state.json").read_text())["tasks"]:
        assert f">{key}<" in html
    assert "solved" in html and "passed" in html and html.count("<svg") >= 3
    # Both tumour runs were graded and placed on their competition's leaderboard by the grader, so
    # the medal columns and Figure 9's Elo-MMR rating come from real runs.
    context = campaign_context(campaign_dir)
    placed = [row for row in context["rows"] if row.rank is not None]
    assert sorted(row.key for row in placed) == ["tumours-a", "tumours-b"]
    assert all(row.n_teams == 120 and row.leaderboard_from == "test score on the leaderboard file" for row in placed)
    assert not isinstance(context["elo"], NotAvailable) and len(context["elo"].history) == 2
    assert context["fig9"].svg.startswith("<svg") and context["fig9_history"].svg.startswith("<svg")
    events = (campaign_dir / "events.jsonl").read_text() if (campaign_dir / "events.jsonl").is_file() else ""
    assert "campaign_report_failed" not in events
