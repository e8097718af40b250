"""`agentk report ROOT/campaign-bench`: the page of an `agentk bench --campaign` (report.html beside
bench.json) — Figure 14 of Agent K for every selection order side by side, the orders' table with a
link to each order's campaign page, and warm vs cold solver starts.

It reads the bench's record (bench.json, a CampaignBench). Without one (a bench killed before its
end, or an older bench) Figure 14 and the orders' table are recomputed from the campaign folders'
state.json; warm vs cold is kept only in the record, so it then says why it is not available.
Each section is built on its own: an error in one becomes that section's "not available: <reason>".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentk.core.campaign_record import BENCH_JSON, COLD, CampaignBench, CampaignState, figure14
from agentk.core.errors import AgentKError
from agentk.report import campaign_figures as figures
from agentk.report.campaign_report import utc_minute
from agentk.report.page import REPORT_FILE, NotAvailable, figure, guarded, render, write_page

TEMPLATE = "bench.html.j2"
MAX_REASON = 400  # a validation error can run to pages; the note keeps its start


@dataclass(frozen=True)
class Loaded:
    """What the page is drawn from: the bench's record, or one rebuilt from its campaign folders."""

    bench: CampaignBench
    recomputed: NotAvailable | None = None  # why there was no record to read (None: read from bench.json)


def read_bench(bench_dir: Path) -> CampaignBench | NotAvailable:
    """bench.json as the bench wrote it (a CampaignBench; the `--output` JSON, which holds it under
    "campaign", is read too); "not available" saying why when it is missing or unreadable."""
    path = Path(bench_dir) / BENCH_JSON
    if not path.is_file():
        return NotAvailable(f"there is no {BENCH_JSON} in {bench_dir} (the bench did not finish)")
    try:
        data = json.loads(path.read_bytes())
        if isinstance(data, dict) and "orders" not in data and isinstance(data.get("campaign"), dict):
            data = data["campaign"]
        return CampaignBench.model_validate(data)
    except (OSError, ValueError) as exc:
        return NotAvailable(f"{path} could not be read: {_short(exc)}")


def campaign_folders(bench_dir: Path) -> dict[str, CampaignState]:
    """The campaign folders under the bench's folder (each holding a state.json), in the order they
    were started, which is the order the bench ran them in."""
    found = []
    for folder in Path(bench_dir).iterdir():
        if not folder.is_dir():
            continue
        try:
            state = CampaignState.read(folder)
        except ValueError:
            continue
        if state is not None:
            found.append((state.created, folder.name, state))
    return {name: state for _, name, state in sorted(found, key=lambda f: (f[0], f[1]))}


def recompute(bench_dir: Path) -> CampaignBench:
    """A record rebuilt from the campaign folders: the pool, the folders and Figure 14 (warm vs
    cold needs the bench itself)."""
    states = campaign_folders(bench_dir)
    if not states:
        raise AgentKError(f"no campaign bench in {bench_dir}: neither {BENCH_JSON} nor a campaign folder (with state.json)")
    orders = {label: state for label, state in states.items() if label != COLD}
    first = next(iter(orders.values()), next(iter(states.values())))
    return CampaignBench(pool=list(first.tasks), folders={label: str(Path(bench_dir) / label) for label in states},
                         orders=figure14(orders))


def load(bench_dir: Path) -> Loaded:
    record = read_bench(bench_dir)
    if isinstance(record, CampaignBench):
        return Loaded(record)
    return Loaded(recompute(bench_dir), record)


def report_link(bench_dir: Path, label: str, folders: dict[str, str]) -> str | None:
    """A campaign's report.html relative to the bench's folder, when it exists: under the bench's
    folder first (a bench folder that was moved keeps its links), else where the record says."""
    for folder in (Path(bench_dir) / label, Path(folders.get(label) or Path(bench_dir) / label)):
        page = folder / REPORT_FILE
        if page.is_file():
            return Path(os.path.relpath(page.resolve(), Path(bench_dir).resolve())).as_posix()
    return None


def _short(exc: Exception) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


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
