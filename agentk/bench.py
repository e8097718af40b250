"""`agentk bench`: run competitions and report, per competition, setup attempts per stage, time to a
valid submission, the validation and test scores, and the best constant prediction's score."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from agentk.baselines import constant_score
from agentk.config import RunConfig
from agentk.errors import AgentKError, SourceError
from agentk.sources import load_competition


def expand_sources(sources: list[str]) -> list[str]:
    """Each argument is a competition folder or a folder whose sub-folders are competitions."""
    if not sources:
        from agentk.demo import make_demo_competition

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


def run_bench(sources: list[str], config: RunConfig, seeds: int = 1) -> list[dict[str, Any]]:
    """One row per (competition, seed); with several seeds each seed gets its own workspace root."""
    from agentk.runner import run_competition

    rows = []
    for source in sources:
        competition = load_competition(source)
        baseline = constant_score(competition)
        for seed in range(seeds):
            seeded = config if seeds == 1 else config.model_copy(update={"seed": seed, "workspace_root": Path(config.workspace_root) / f"seed{seed}"})
            rows.append(_run_one(run_competition, source, competition.id, seeded, baseline))
    return rows


def _run_one(run_competition, source: str, competition_id: str, config: RunConfig, baseline: float | None) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = run_competition(source, config).result
        error = None
    except AgentKError as exc:
        result, error = {}, str(exc)
        result_path = Path(config.workspace_root).resolve() / competition_id / "result.json"
        if result_path.exists():  # a failed run still records its setup attempts
            result = json.loads(result_path.read_text(encoding="utf-8"))
    setup = result.get("setup", {})
    return {
        "competition": competition_id,
        "seed": config.seed,
        "setup_passed": bool(setup) and all(s["passed"] for s in setup.values()) and all(m["passed"] for m in result.get("meta", {}).values()),
        "stage_passed": {k: v["passed"] for k, v in setup.items()},
        "tokens": (result.get("llm_usage") or {}).get("total_tokens", 0),
        "valid_submission": bool(result.get("valid_submission")),
        "metric": result.get("test_metric") or result.get("metric"),
        "validation_score": result.get("validation_score"),
        "test_score": result.get("test_score"),
        "constant_score": baseline,
        "setup_attempts": {k: v["attempts"] for k, v in setup.items()},
        "time_to_valid_submission_s": round(time.monotonic() - started, 1) if result.get("valid_submission") else None,
        "model": result.get("model"),
        "error": error,
    }


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased estimator of the chance that at least one of k samples passes, from n samples
    of which c passed (Chen et al., 2021; Agent K section 4). None when k > n."""
    if k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


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


def render_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench")
    for column in ("competition", "metric", "setup attempts (stages)", "valid", "time to valid (s)", "validation", "test", "constant"):
        table.add_column(column)
    for row in rows:
        attempts = row["setup_attempts"]
        extra = sum(attempts.values()) - len(attempts)
        table.add_row(
            row["competition"],
            str(row["metric"]),
            f"{sum(attempts.values())} ({len(attempts)})" + (f", {extra} retries" if extra else ""),
            "yes" if row["valid_submission"] else f"no: {row['error']}",
            _fmt(row["time_to_valid_submission_s"], 1),
            _fmt(row["validation_score"]),
            _fmt(row["test_score"]),
            _fmt(row["constant_score"]),
        )
    return table


def _fmt(value: object, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"
