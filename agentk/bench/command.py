"""What `agentk bench` does once its options are read: run the competitions (with rivals, seeds and
splits) or, with --campaign, the campaigns; print their tables and write --output's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentk.bench.medal_thresholds import read_thresholds
from agentk.bench.run import (
    compare, expand_sources, parse_rivals, place_medals, render_comparison, render_seed_table, render_table,
    run_bench, summarise_seeds, summary_line,
)
from agentk.cli_common import guard, wide_console
from agentk.core.records.config import RunConfig


def bench_competitions(sources: list[str], run_config: dict[str, Any], *, seeds: int, rivals: str | None, splits: int,
                       autogluon_python: Path | None, medals: Path | None, output: Path | None) -> bool:
    """The bench's table (with seeds, the per-stage success rates; with rivals or splits, the
    comparison) and --output's JSON; False when a single-seed bench wrote an invalid submission."""
    chosen = guard(lambda: parse_rivals(rivals))
    thresholds = guard(lambda: read_thresholds(medals)) if medals is not None else None
    config = RunConfig(**run_config)
    rows = guard(lambda: run_bench(expand_sources(sources), config, seeds=seeds, rivals=chosen, splits=splits, autogluon_python=autogluon_python))
    if thresholds is not None:
        place_medals(rows, thresholds)
    out = wide_console()
    out.print(render_table(rows))
    summaries = summarise_seeds(rows) if seeds > 1 else []
    if summaries:
        out.print(render_seed_table(summaries))
    comparisons = compare(rows) if chosen or splits > 1 else []
    if comparisons:
        out.print(render_comparison(comparisons))
        if chosen:
            out.print(summary_line(comparisons))
    if output is not None:
        if seeds == 1 and splits == 1:
            data: object = rows  # the shape bench has always written
        else:
            data = {"runs": rows, **({"summaries": summaries} if summaries else {}), "comparison": comparisons}
        output.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return seeds != 1 or all(r["valid_submission"] for r in rows)


def bench_holdout(sources: list[str], run_config: dict[str, Any], repeats: int, fraction: float,
                  output: Path | None) -> bool:
    """`agentk bench --holdout-repeats R`: every choice rule's held-out score over R splits of each
    split competition (holdout.py); False when no repeat could be scored."""
    from agentk.bench.holdout import holdout_bench, render_holdout  # lazy: the solver's choice rules

    rows = guard(lambda: holdout_bench(expand_sources(sources), RunConfig(**run_config), repeats, fraction, output))
    wide_console().print(render_holdout(rows))
    return bool(rows)


def bench_campaigns(sources: list[str], workspace_root: Path, output: Path | None, orders: str | None,
                    warm_vs_cold: bool, run_config: dict[str, Any]) -> bool:
    """`agentk bench --campaign`: the campaigns, their tables, bench.json and the bench's page in
    ROOT/campaign-bench/, and --output's JSON under "campaign"; False when no order solved anything
    (the bench measured nothing)."""
    # Here, not at the top: the campaigns pull in the task memory (lancedb), which a bench of
    # competitions never needs.
    from agentk.bench.campaign_bench import (
        parse_orders, render_figure14, render_warm_cold, run_campaign_bench, write_bench_page,
    )

    chosen = guard(lambda: parse_orders(orders))
    # The campaign's pool reads folders, folders of them and task files itself; none: the demo.
    specs = sources or guard(lambda: expand_sources([]))
    result = guard(lambda: run_campaign_bench(specs, run_config, chosen, warm_vs_cold, workspace_root))
    out = wide_console()
    out.print(render_figure14(result))
    for note in result.notes:
        out.print(f"note: {note}", soft_wrap=True)
    if result.warm_vs_cold is not None:
        out.print(render_warm_cold(result.warm_vs_cold))
    if output is not None:
        output.write_text(json.dumps({"campaign": result.model_dump(mode="json")}, indent=2), encoding="utf-8")
    page, warning = write_bench_page(workspace_root)
    out.print(f"report: {page}" if page is not None else f"warning: {warning}", soft_wrap=True, markup=False)
    return any(row.solved for row in result.orders)
