"""`agentk bench`: run competitions and report, per competition, setup attempts per stage, time to a
valid submission, the validation and test scores, and the best constant prediction's score.

With rivals (`--rivals lightgbm,autogluon`) each competition is also solved, in the same run, on
the same workspace and with the same time budget, by LightGBM with defaults and by AutoGluon
(agentk/bench/rivals/), and the table compares score, time to first valid submission, total time
and peak memory. With `--splits N` every split competition is graded over held-out splits with
seeds 0..N-1 and the comparison reports the mean and spread over them.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from agentk.bench.baselines import constant_score
from agentk.bench.medal_thresholds import Thresholds
from agentk.bench.rivals.autogluon_rival import run_autogluon
from agentk.bench.rivals.common import SystemResult
from agentk.bench.rivals.lightgbm_defaults import run_lightgbm
from agentk.bench.rivals.memory import PeakRss
from agentk.bench.rivals.splits import is_resplittable, split_source
from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import RunConfig
from agentk.core.errors import AgentKError, SourceError
from agentk.core.metrics.direction import Direction
from agentk.core.pass_at import pass_at_k
from agentk.core.records.results import RunResult, SolveResult
from agentk.core.records.workspace import Workspace, read_json_object
from agentk.runner import run_competition
from agentk.sources import load_competition
from agentk.sources.base import Competition
from agentk.sources.demo import make_demo_competition


def expand_sources(sources: list[str]) -> list[str]:
    """Each argument is a competition folder or a folder whose sub-folders are competitions."""
    if not sources:
        return [str(make_demo_competition(Path("workspaces/_sources/demo").resolve()))]
    expanded: list[str] = []
    for source in sources:
        path = Path(source)
        try:
            load_competition(path)
            expanded.append(str(path))
            continue
        except SourceError:
            if not path.is_dir():
                raise
        children = [str(child) for child in sorted(path.iterdir()) if child.is_dir() and _loads(child)]
        if not children:
            raise SourceError(f"{path} is neither a competition folder nor a folder of competitions")
        expanded.extend(children)
    return expanded


def _loads(path: Path) -> bool:
    try:
        load_competition(path)
        return True
    except SourceError:
        return False


RIVALS: tuple[str, ...] = ("lightgbm", "autogluon")
SYSTEMS: tuple[str, ...] = ("agentk", *RIVALS)


def parse_rivals(text: str | None) -> tuple[str, ...]:
    """`lightgbm,autogluon` (the default), a subset, or `none`; anything else is a one-line error."""
    if text is None:
        return RIVALS
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return ()
    unknown = [n for n in names if n not in RIVALS]
    if unknown or not names:
        raise AgentKError(f"--rivals takes a comma-separated list of {', '.join(RIVALS)}, or none; not {text!r}")
    return tuple(n for n in RIVALS if n in names)


def run_bench(sources: list[str], config: RunConfig, seeds: int = 1, rivals: tuple[str, ...] = (),
              splits: int = 1, autogluon_python: Path | None = None) -> list[dict[str, Any]]:
    """One row per (competition, split, seed). Several seeds or splits each get their own workspace
    root, so runs never collide; rivals run on the workspace agentk just used."""

    root = Path(config.workspace_root)
    rows = []
    for source in sources:
        repeat = splits > 1 and is_resplittable(Path(source))
        for split in range(splits if repeat else 1):
            split_src = str(split_source(Path(source), split, root / "_splits")) if repeat else source
            competition = load_competition(split_src)
            baseline = constant_score(competition)
            for seed in range(seeds):
                base = root / f"split{split}" if repeat else root
                run_config = config.model_copy(update={"workspace_root": base / f"seed{seed}" if seeds > 1 else base})
                if seeds > 1:
                    run_config = run_config.with_solve(seed=seed)
                row = _run_one(run_competition, split_src, competition.id, run_config, baseline)
                row["split"] = split if repeat else None
                if competition.grading is not None:  # the grader's direction, not the agent's reading of it
                    row["higher_is_better"] = competition.grading.higher_is_better
                if splits > 1 and not repeat:
                    row["notes"] = ["fixed test set: graded once"]
                workspace = Workspace(Path(run_config.workspace_root).resolve() / competition.id)
                row["systems"].update(_run_rivals(rivals, workspace, competition, run_config, autogluon_python))
                rows.append(row)
    return rows


def _run_rivals(rivals: tuple[str, ...], workspace: Workspace, competition: Competition, config: RunConfig,
                autogluon_python: Path | None) -> dict[str, dict[str, Any]]:
    runners: dict[str, Callable[[], SystemResult]] = {
        "lightgbm": lambda: run_lightgbm(workspace, competition, config.solve.time_budget_s, config.solve.seed),
        "autogluon": lambda: run_autogluon(workspace, competition, config.solve.time_budget_s, autogluon_python),
    }
    results = {}
    for name in rivals:
        try:
            results[name] = runners[name]().to_dict()
        except Exception as exc:  # noqa: BLE001 - a rival's failure is a table cell, never the bench's end
            results[name] = SystemResult(name, status=f"error: {type(exc).__name__}: {exc}"[:240]).to_dict()
    return results


def _run_one(run_competition, source: str, competition_id: str, config: RunConfig, baseline: float | None) -> dict[str, Any]:
    started = time.monotonic()
    with PeakRss() as peak:
        try:
            result = run_competition(source, config).result
            error = None
        except AgentKError as exc:
            error = str(exc)
            # A failed run still records its setup attempts.
            result = RunResult.read(Path(config.workspace_root).resolve() / competition_id / "result.json") \
                or RunResult(competition_id=competition_id)
    total = round(time.monotonic() - started, 1)
    setup = result.setup
    workspace = Workspace(Path(config.workspace_root).resolve() / competition_id)
    agentk = _agentk_system(result, workspace, error, total, peak.mb)
    agentk.peak_breakdown = peak.breakdown() or None
    return {
        "competition": competition_id,
        "seed": config.solve.seed,
        "setup_passed": result.setup_passed,
        "stage_passed": {k: v.passed for k, v in setup.items()},
        "tokens": (result.llm_usage or {}).get("total_tokens", 0),
        "valid_submission": result.valid_submission,
        "metric": result.test_metric or result.metric,
        "higher_is_better": result.higher_is_better,
        "validation_score": result.validation_score,
        "test_score": result.test_score,
        "constant_score": baseline,
        "setup_attempts": {k: v.attempts for k, v in setup.items()},
        "time_to_valid_submission_s": total if result.valid_submission else None,
        "model": result.model,
        "error": error,
        "tabular": _tabular(workspace),
        "systems": {"agentk": agentk.to_dict()},
    }


def _agentk_system(result: RunResult, workspace: Workspace, error: str | None, total_s: float, peak_mb: float) -> SystemResult:
    """agentk's cell group. Time to first valid submission = the setup's time + the solver's own
    time to its first submission; the setup's time is the run's minus the solver's (so it also
    holds the solver's start-up and the final validation: a slight overestimate, never an under)."""
    system = SystemResult("agentk", total_s=total_s, peak_rss_mb=peak_mb)
    system.valid_submission = result.valid_submission
    system.test_score = result.test_score
    system.submission_path = result.submission_path
    if not system.valid_submission:
        system.status = f"error: {error or result.error or 'no valid submission'}"[:240]
        return system
    solve = SolveResult.read(workspace.solve)
    first, solve_elapsed, elapsed = solve.time_to_first_submission_s, solve.elapsed_s, result.elapsed_s
    if all(isinstance(v, (int, float)) for v in (first, solve_elapsed, elapsed)):
        system.time_to_first_submission_s = round(max(0.0, elapsed - solve_elapsed) + first, 1)
    else:
        system.notes.append(f"{SolveResult.FILE} lacks timing: time to first submission unknown")
    return system


def _tabular(workspace: Workspace) -> bool | None:
    modalities = read_json_object(SetupLayout(workspace.setup).modalities).get("input_modalities")
    return None if not isinstance(modalities, list) else "image" not in modalities


# ---------------------------------------------------------------- side-by-side comparison


def compare(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per competition and system, over its splits (and seeds): mean and spread of the test score,
    the ratio to AutoGluon oriented so that > 1 means better than AutoGluon, mean times, peak memory."""
    out = []
    for competition in dict.fromkeys(r["competition"] for r in rows):
        runs = [r for r in rows if r["competition"] == competition]
        higher = next((r["higher_is_better"] for r in runs if r.get("higher_is_better") is not None), None)
        systems = {}
        for name in dict.fromkeys(n for r in runs for n in r["systems"]):
            cells = [r["systems"][name] for r in runs if name in r["systems"]]
            scores = [c["test_score"] for c in cells if isinstance(c["test_score"], (int, float)) and math.isfinite(c["test_score"])]
            bad = [c["status"] for c in cells if c["status"] != "ok"]
            systems[name] = {
                "runs": len(cells),
                "scored": len(scores),
                "mean": statistics.fmean(scores) if scores else None,
                "std": statistics.stdev(scores) if len(scores) > 1 else None,
                "scores": scores,
                "time_to_first_submission_s": _mean(c["time_to_first_submission_s"] for c in cells),
                "total_s": _mean(c["total_s"] for c in cells),
                "peak_rss_mb": max((c["peak_rss_mb"] for c in cells if c["peak_rss_mb"]), default=None),
                "status": "ok" if not bad else (bad[0] if len(bad) == len(cells) else f"{len(bad)}/{len(cells)} failed: {bad[0]}"),
                "notes": list(dict.fromkeys(n for c in cells for n in c.get("notes", []))),
            }
        reference = systems.get("autogluon", {}).get("mean")
        for system in systems.values():
            system["vs_autogluon"] = _ratio(system["mean"], reference, higher)
        out.append({
            "competition": competition,
            "metric": runs[0]["metric"],
            "higher_is_better": higher,
            "splits": sorted({r["split"] for r in runs if r.get("split") is not None}),
            "tabular": runs[0].get("tabular"),
            "systems": systems,
        })
    return out


def _mean(values: Any) -> float | None:
    numbers = [v for v in values if isinstance(v, (int, float))]
    return round(statistics.fmean(numbers), 1) if numbers else None


def _ratio(ours: float | None, autogluon: float | None, higher: bool | None) -> float | None:
    """ours/AG for higher-is-better, AG/ours for lower-is-better: > 1 always means better than
    AutoGluon. Undefined when a score is not positive (r2, mcc and kappa can be <= 0)."""
    if ours is None or autogluon is None or higher is None or ours <= 0 or autogluon <= 0:
        return None
    return ours / autogluon if higher else autogluon / ours


def summary_line(comparisons: list[dict[str, Any]]) -> str:
    """How many tabular competitions (those AutoGluon scored) agentk matches or beats AutoGluon on,
    and beats LightGBM defaults on, by mean test score."""
    scored = [c for c in comparisons if c["higher_is_better"] is not None and c["systems"].get("agentk", {}).get("mean") is not None]
    with_ag = [c for c in scored if c["systems"].get("autogluon", {}).get("mean") is not None]
    with_lgb = [c for c in scored if c["systems"].get("lightgbm", {}).get("mean") is not None]
    ge_ag = {c["competition"] for c in with_ag
             if Direction(c["higher_is_better"]).at_least(c["systems"]["agentk"]["mean"], c["systems"]["autogluon"]["mean"])}
    gt_lgb = {c["competition"] for c in with_lgb
              if Direction(c["higher_is_better"]).better(c["systems"]["agentk"]["mean"], c["systems"]["lightgbm"]["mean"])}
    both = [c for c in with_ag if c["competition"] in ge_ag and c["competition"] in gt_lgb]
    ag_part = f"agentk >= AutoGluon on {len(ge_ag)}/{len(with_ag)} tabular competitions" if with_ag else "AutoGluon scored no competition"
    lgb_part = f"> LightGBM defaults on {len(gt_lgb)}/{len(with_lgb)}" if with_lgb else "LightGBM defaults scored none"
    return f"{ag_part}; {lgb_part}; both on {len(both)}/{len(with_ag)}"


def render_comparison(comparisons: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench: side by side (same split, same budget)")
    for column in ("competition", "metric", "system", "test score", "vs AG (>1 better)", "first sub (s)", "total (s)", "peak MB", "status"):
        table.add_column(column, no_wrap=column in ("competition", "system"))
    for comparison in comparisons:
        higher = comparison["higher_is_better"]
        metric = f"{comparison['metric']} ({'↑' if higher else '↓' if higher is not None else '?'})"
        splits = comparison["splits"]
        for k, (name, s) in enumerate(comparison["systems"].items()):
            score = _fmt(s["mean"]) + (f" ± {s['std']:.4f}" if s["std"] is not None else "")
            if len(splits) > 1 and s["mean"] is not None:
                score += f" (n={s['scored']})"
            table.add_row(
                comparison["competition"] if k == 0 else "", metric if k == 0 else "", name, score,
                _fmt(s["vs_autogluon"], 3), _fmt(s["time_to_first_submission_s"], 1), _fmt(s["total_s"], 1),
                _fmt(s["peak_rss_mb"], 0), s["status"],
            )
        table.add_section()
    return table


def summarise_seeds(rows: list[dict[str, Any]], ks: tuple[int, ...] = (1, 3, 10)) -> list[dict[str, Any]]:
    """Per competition over its seeds: per-stage success rates, Pass@k of the whole setup, and
    tokens per successful setup."""
    summaries = []
    for competition in dict.fromkeys(r["competition"] for r in rows):
        runs = [r for r in rows if r["competition"] == competition]
        n, c = len(runs), sum(r["setup_passed"] for r in runs)
        stages: dict[str, list[bool]] = {}
        for run in runs:
            for stage, passed in run["stage_passed"].items():
                stages.setdefault(stage, []).append(passed)
        summaries.append({
            "competition": competition,
            "runs": n,
            "setups_passed": c,
            "stage_success": {stage: sum(v) / len(v) for stage, v in stages.items()},
            "pass_at": {k: pass_at_k(n, c, k) for k in ks},
            "tokens_per_successful_setup": (sum(r["tokens"] for r in runs) / c) if c else None,
        })
    return summaries


def render_seed_table(summaries: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench: setup over seeds")
    for column in ("competition", "runs", "setups passed", "Pass@1", "Pass@3", "Pass@10", "weakest stage", "tokens / success"):
        table.add_column(column)
    for row in summaries:
        weakest = min(row["stage_success"].items(), key=lambda kv: kv[1], default=("—", 1.0))
        table.add_row(
            row["competition"], str(row["runs"]), str(row["setups_passed"]),
            *(_fmt(row["pass_at"][k], 3) for k in (1, 3, 10)),
            f"{weakest[0]} ({weakest[1]:.0%})", _fmt(row["tokens_per_successful_setup"], 0),
        )
    return table


def place_medals(rows: list[dict[str, Any]], thresholds: dict[str, Thresholds]) -> None:
    """Each row's test score placed on its competition's medal thresholds (`medal`), when known."""
    for row in rows:
        known = thresholds.get(row["competition"])
        row["medal"] = known.place(row["test_score"]) if known is not None else None


def render_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench")
    medals = any(row.get("medal") is not None for row in rows)
    columns = ["competition", "metric", "setup attempts (stages)", "valid", "time to valid (s)", "validation", "test",
               "constant", *(["medal"] if medals else []), "total (s)", "peak MB"]
    for column in columns:
        table.add_column(column)
    for row in rows:
        attempts = row["setup_attempts"]
        extra = sum(attempts.values()) - len(attempts)
        agentk = row["systems"].get("agentk", {})
        table.add_row(
            row["competition"],
            str(row["metric"]),
            f"{sum(attempts.values())} ({len(attempts)})" + (f", {extra} retries" if extra else ""),
            "yes" if row["valid_submission"] else f"no: {row['error']}",
            _fmt(row["time_to_valid_submission_s"], 1),
            _fmt(row["validation_score"]),
            _fmt(row["test_score"]),
            _fmt(row["constant_score"]),
            *([str(row.get("medal") or "—")] if medals else []),
            _fmt(agentk.get("total_s"), 0),
            _fmt(agentk.get("peak_rss_mb"), 0),
        )
    return table


def _fmt(value: object, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"
