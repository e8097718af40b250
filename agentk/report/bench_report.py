"""`agentk report ROOT/campaign-bench`: the page of an `agentk bench --campaign` (report.html beside
bench.json) — Figure 14 of Agent K for every selection order side by side, the orders' table with a
link to each order's campaign page, and warm vs cold solver starts.

It reads the bench's record (bench.json, a CampaignBench). Without one (a bench killed before its
end, or an older bench) Figure 14 and the orders' table are recomputed from the campaign folders'
state.json; warm vs cold is kept only in the record, so it then says why it is not available.
Each section is built on its own: an error in one becomes that section's "not available: <reason>".
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentk.core.records.campaign_record import BENCH_JSON, COLD, CampaignBench
from agentk.core.errors import AgentKError
from agentk.report import campaign_figures as figures
from agentk.report.bench_data import load
from agentk.report.page import REPORT_FILE, NotAvailable, figure, guarded, render, utc_minute, write_page

TEMPLATE = "bench.html.j2"


def report_link(bench_dir: Path, label: str, folders: dict[str, str]) -> str | None:
    """A campaign's report.html relative to the bench's folder, when it exists: under the bench's
    folder first (a bench folder that was moved keeps its links), else where the record says."""
    for folder in (Path(bench_dir) / label, Path(folders.get(label) or Path(bench_dir) / label)):
        page = folder / REPORT_FILE
        if page.is_file():
            return Path(os.path.relpath(page.resolve(), Path(bench_dir).resolve())).as_posix()
    return None


def _cards(bench: CampaignBench) -> list[tuple[str, str]]:
    cards = [("pool", f"{len(bench.pool)} tasks"), ("orders", str(len(bench.orders)))]
    best = max((r for r in bench.orders if r.area is not None), key=lambda r: r.area or 0.0, default=None)
    if best is not None:
        cards.append(("largest area", f"{best.order} ({best.area:.3f})"))
    cards.append(("runs", str(sum(r.runs for r in bench.orders))))
    cards.append(("wall time", f"{sum(r.total_s for r in bench.orders) / 60:.1f} min"))
    cards.append(("LLM tokens", f"{sum(r.tokens for r in bench.orders):,}"))
    warm = bench.warm_vs_cold
    if warm is not None and warm.median_ratio is not None:
        cards.append(("warm / cold (median)", f"{warm.median_ratio:.3f}"))
    return cards


def bench_context(bench_dir: Path) -> dict[str, Any]:
    """Everything the template shows; raises AgentKError only when the folder holds no bench."""
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        raise AgentKError(f"no campaign bench in {bench_dir}: no such folder")
    loaded = load(bench_dir)
    bench = loaded.bench
    orders = guarded("the orders' table", lambda: bench.orders or NotAvailable("the bench ran no order"))
    rows = orders if isinstance(orders, list) else []
    links = guarded("the campaigns' links", lambda: {label: report_link(bench_dir, label, bench.folders)
                                                     for label in bench.folders})
    links = links if isinstance(links, dict) else {}
    if loaded.recomputed is not None:
        warm: Any = NotAvailable(f"{loaded.recomputed.reason}; warm vs cold is computed by the bench and kept "
                                 f"only in its {BENCH_JSON}")
    elif bench.warm_vs_cold is None:
        warm = NotAvailable("the bench ran without it (--no-warm-vs-cold)")
    else:
        warm = bench.warm_vs_cold

    def chart(title: str, which: str) -> Any:
        return figure(title, guarded(title, lambda: orders if isinstance(orders, NotAvailable)
                                     else figures.successes_vs(orders, which)))

    return {
        "bench": bench,
        "folder": str(bench_dir),
        "recomputed": loaded.recomputed,
        "cards": guarded("the summary", lambda: _cards(bench)),
        "orders": orders,
        "horizon": next((r.horizon_s for r in rows if r.horizon_s is not None), None),
        "links": links,
        "fig14_time": chart("Figure 14: tasks solved against wall time, per selection order", "time"),
        "fig14_tokens": chart("Figure 14: tasks solved against LLM tokens, per selection order", "tokens"),
        "warm": warm,
        "cold": COLD,
        "generated": utc_minute(datetime.now(UTC)),
    }


def write_bench_report(bench_dir: Path) -> Path:
    """Write (or refresh) BENCH_DIR/report.html and return its path."""
    bench_dir = Path(bench_dir)
    return write_page(bench_dir / REPORT_FILE, render(TEMPLATE, **bench_context(bench_dir)))
