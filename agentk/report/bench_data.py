"""What a campaign bench's pages read: its record (bench.json, a CampaignBench) or, without one, a
record rebuilt from its campaign folders. The bench page draws all of it; a campaign page of the
bench draws Figure 14 from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agentk.core.records.campaign_record import BENCH_JSON, COLD, CampaignBench, CampaignState, figure14
from agentk.core.errors import AgentKError
from agentk.report.page import NotAvailable

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


def _short(exc: Exception) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"
