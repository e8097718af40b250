"""The held-out bench's parts on tiny data: a split of a given fraction held out of train, and the
table of every rule's held-out score over repeats (paired against max-CV) from constructed records."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import t

from agentk.bench.holdout import ORACLE, Repeat, picks, summarise
from agentk.bench.rivals.splits import split_source
from agentk.sources import load_competition
from solve_pipeline.base.choice_rule import Evidence

TOML = """[competition]
id = "tiny"
title = "Tiny"

[grading]
metric = "accuracy"
higher_is_better = true
id_column = "id"
target_columns = ["y"]
answers = "split"
split_test_fraction = 0.1
split_seed = 0
"""


def test_a_split_holds_out_the_fraction_asked_for(tmp_path: Path) -> None:
    source = tmp_path / "tiny"
    (source / "data").mkdir(parents=True)
    (source / "description.md").write_text("# Tiny\nPredict y. Submissions are scored on accuracy.\n")
    (source / "competition.toml").write_text(TOML)
    pd.DataFrame({"id": range(40), "x": range(40), "y": [i % 2 for i in range(40)]}).to_csv(source / "data" / "train.csv", index=False)
    split = split_source(source, 3, tmp_path / "splits", fraction=0.3)
    assert "split_test_fraction = 0.3" in (split / "competition.toml").read_text()
    assert "split_seed = 3" in (split / "competition.toml").read_text()
    assert len(load_competition(split).answers()) == 12
    other = load_competition(split_source(source, 4, tmp_path / "splits", fraction=0.3)).answers()
    assert set(other["id"].astype(str)) != set(load_competition(split).answers()["id"].astype(str))


def _e(name: str, folds: list[float], kind: str = "model", configs: int = 1) -> dict:
    return Evidence(name, statistics.fmean(folds), tuple(folds), kind, configs, (name,)).to_json()  # type: ignore[arg-type]


def _repeat(i: int, tuned_held: float, forest_held: float) -> Repeat:
    # The tuned model leads on CV, the forest is within noise of it and less searched.
    evidence = [_e("constant", [0.6, 0.6, 0.6], kind="constant"),
                _e("random_forest", [0.83, 0.82, 0.84]),
                _e("lightgbm_tuned", [0.84, 0.83, 0.84], kind="tuned", configs=30)]
    return Repeat(competition="tiny", repeat=i, fraction=0.3, time_budget_s=30, higher_is_better=True,
                  held_out={"constant": 0.6, "random_forest": forest_held, "lightgbm_tuned": tuned_held},
                  evidence=evidence)


def test_the_table_pairs_each_rule_with_max_cv() -> None:
    records = [_repeat(0, 0.80, 0.82), _repeat(1, 0.81, 0.82), _repeat(2, 0.79, 0.80)]
    assert picks(records[0]) == {"max_cv": "lightgbm_tuned", "within_noise": "random_forest",
                                 "within_noise_no_blend_first": "random_forest", "best_single_family": "random_forest"}
    rows = {r["rule"]: r for r in summarise(records)}
    noise, best = rows["within_noise"], rows["max_cv"]
    assert best["mean"] == pytest.approx(0.80) and best["vs_max_cv"] == 0 and best["differs"] == 0
    assert noise["mean"] == pytest.approx(statistics.fmean([0.82, 0.82, 0.80])) and noise["differs"] == 3
    gains = [0.02, 0.01, 0.01]
    assert noise["vs_max_cv"] == pytest.approx(statistics.fmean(gains))
    assert noise["vs_max_cv_half"] == pytest.approx(t.ppf(0.975, 2) * statistics.stdev(gains) / math.sqrt(3))
    assert rows[ORACLE]["mean"] == pytest.approx(noise["mean"])  # the forest was the best held-out every time


def test_lower_is_better_orients_the_difference() -> None:
    record = _repeat(0, 0.5, 0.4).model_copy(update={"higher_is_better": False})
    # Log losses: the leader is now the lowest CV, and a lower held-out score counts as a gain.
    record.evidence = [_e("random_forest", [0.42, 0.41, 0.43]), _e("lightgbm_tuned", [0.41, 0.41, 0.42], kind="tuned", configs=30)]
    rows = {r["rule"]: r for r in summarise([record])}
    assert picks(record)["max_cv"] == "lightgbm_tuned" and picks(record)["within_noise"] == "random_forest"
    assert rows["within_noise"]["vs_max_cv"] == pytest.approx(0.1)


def test_holdout_repeats_refuse_splits_seeds_and_rivals(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "agentk.cli", "bench", str(tmp_path), "--holdout-repeats", "2",
                                "--splits", "2", "-w", str(tmp_path / "ws")],
                               capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert completed.returncode != 0 and "--holdout-repeats makes its own splits" in completed.stdout + completed.stderr
