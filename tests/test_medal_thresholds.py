"""Medal thresholds in MLE-bench's format, placed in both directions; a bad file is one error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentk.bench.medal_thresholds import read_thresholds
from agentk.bench.run import place_medals, render_table
from agentk.core.errors import AgentKError


def test_scores_are_placed_in_the_metric_direction(tmp_path: Path) -> None:
    path = tmp_path / "medals.json"
    path.write_text(json.dumps({
        "_about": "a comment",
        "up": {"gold": 0.9, "silver": 0.85, "bronze": 0.8, "median": 0.7, "higher_is_better": True},
        "down": {"gold": 0.1, "silver": 0.2, "bronze": 0.3, "median": 0.5, "higher_is_better": False},
    }), encoding="utf-8")
    thresholds = read_thresholds(path)
    assert set(thresholds) == {"up", "down"}
    up, down = thresholds["up"], thresholds["down"]
    assert [up.place(s) for s in (0.95, 0.9, 0.86, 0.8, 0.75, 0.6, None)] == \
        ["gold", "gold", "silver", "bronze", "above median", "below median", "—"]
    assert [down.place(s) for s in (0.05, 0.25, 0.3, 0.4, 0.9)] == ["gold", "bronze", "bronze", "above median", "below median"]

    rows = [{"competition": c, "metric": "m", "setup_attempts": {"plan": 1}, "valid_submission": True, "error": None,
             "time_to_valid_submission_s": 3.0, "validation_score": s, "test_score": s, "constant_score": 0.5,
             "systems": {"agentk": {"total_s": 12.0, "peak_rss_mb": 300.0}}}
            for c, s in (("up", 0.82), ("down", 0.25), ("other", 0.5))]
    place_medals(rows, thresholds)
    assert [r["medal"] for r in rows] == ["bronze", "bronze", None]
    assert [c.header for c in render_table(rows).columns][-3:] == ["medal", "total (s)", "peak MB"]


def test_an_unreadable_thresholds_file_is_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "medals.json"
    bad.write_text(json.dumps({"x": {"gold": 1}}), encoding="utf-8")
    with pytest.raises(AgentKError, match="x:"):
        read_thresholds(bad)
    with pytest.raises(AgentKError, match="cannot read"):
        read_thresholds(tmp_path / "missing.json")
