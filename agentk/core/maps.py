"""Setup maps (`train_tab_input_map.csv` and the like) read the one way every reader reads them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


class MapError(ValueError):
    """A map file is missing or unreadable; the message is one line."""


def read_map(path: Path) -> pd.DataFrame:
    """Read a setup map the one way every reader does.

    `id` is kept as text, so ids such as `007` survive, with surrounding spaces stripped: the
    sample submission's ids, the submission validator and `normalise_ids` all strip them, so a
    padded id in a map is the same row there. A missing id stays missing (NaN) for the checks to
    report. Everything else is read as pandas infers it.
    """
    path = Path(path)
    if not path.exists():
        raise MapError(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path, dtype={"id": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise MapError(f"{path.name} cannot be read as CSV: {str(exc).splitlines()[0]}") from exc
    if "id" in frame.columns:
        frame["id"] = frame["id"].str.strip()
    return frame
