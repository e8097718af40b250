"""JSON and JSON Lines tables as frames: a list of records, records wrapped under one key
(`{"data": [...]}`), or pandas' column layout (`{"col": {row: value}}`)."""

from __future__ import annotations

import json

import pandas as pd


def json_frame(text: str, lines: bool) -> pd.DataFrame:
    """The table `text` holds; ValueError when it holds no table."""
    if lines:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        return pd.DataFrame.from_records(records)
    payload = json.loads(text)
    if isinstance(payload, dict):
        lists = [v for v in payload.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        if len(lists) == 1:
            payload = lists[0]
        else:
            return pd.DataFrame(payload)
    if not isinstance(payload, list):
        raise ValueError("a JSON table must be a list of records or an object of columns")
    return pd.DataFrame.from_records(payload)
