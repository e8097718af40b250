"""The solve of a text-to-text target, under the same budget and submission rules as every solve.

A Kaggle grandmaster's start on token normalisation: keep every token as written (the constant, a
valid submission in seconds), then the training pairs memorised (each token's most frequent
rewriting, in context where the previous token decides it), then spelling rules for tokens never
seen (numbers, years, dates, measures, letters), each trusted only where the training pairs bear
it out. The candidates are scored on held-out training rows (the last fifth, whole runs of rows)
and the best, refitted on every row, is adopted through the submission record.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentk.core.artifacts import TEXT_TASK, SetupLayout
from agentk.core.maps import map_columns, read_map
from agentk.core.metrics.direction import Direction
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import atomic_write_json, replacing
from solve_pipeline.base.cv import emit
from solve_pipeline.base.setup_modules import load_setup_module
from solve_pipeline.base.submission_record import SubmissionRecord, adopt_submission, setup_fingerprint
from solve_pipeline.text_to_text.memory import Memory, memorise
from solve_pipeline.text_to_text.rules import MAY_HAVE_SHAPE, Rules, fit_rules

_HELD_OUT = 0.2
LIGHT_ROWS = 20_000
_RULE_ROWS = 2_000_000  # training pairs the rules are judged on: millions more say nothing new
# name -> (memorise, in context, spelling rules)
_CANDIDATES = {"keep_input": (False, False, False), "memorised": (True, False, False),
               "memorised_rules": (True, False, True), "memorised_context_rules": (True, True, True)}


def text_target(setup_dir: Path) -> dict | None:
    """target_info's text-to-text target, or None."""
    try:
        info = json.loads(SetupLayout(setup_dir).target_info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return next((t for t in info.get("targets", []) if isinstance(t, dict) and t.get("task") == TEXT_TASK), None)


@dataclass
class _Rows:
    """Rows in the files' order, each column an Arrow-backed text Series (no Python object per cell)."""

    ids: pd.Series
    tokens: pd.Series
    answers: pd.Series | None

    @property
    def previous(self) -> pd.Series:
        # The map keeps the files' row order: the row before is the token before (a sentence's
        # first token gets the last of the sentence before, which context rarely matches).
        return self.tokens.shift(1, fill_value="")

    def part(self, rows: slice) -> "_Rows":
        def cut(s: pd.Series) -> pd.Series:
            return s.iloc[rows].reset_index(drop=True)
        return _Rows(cut(self.ids), cut(self.tokens), None if self.answers is None else cut(self.answers))


def _read(setup: Path, split: str, target: dict, limit: int | None) -> _Rows:
    layout = SetupLayout(setup)
    source = str(target["source"])
    path = next((p for p in layout.input_maps(split) if source in map_columns(p)), None)
    if path is None:
        raise ValueError(f"no {split} input map holds the text column {source!r}")
    frame = read_map(path, text=True, columns=["id", source])
    answers = None
    if split == "train":
        column = str(target["column"])
        truth = read_map(layout.target_map, text=True, columns=["id", column])
        if not frame["id"].equals(truth["id"]):  # the maps list the same rows in the same order, as a rule
            truth = truth.drop_duplicates("id").set_index("id")[column]
            frame = frame[frame["id"].isin(truth.index)]
            truth = truth.loc[frame["id"]].reset_index()
        if limit is not None:
            frame, truth = frame.head(limit), truth.head(limit)
        answers = truth[column].reset_index(drop=True)
    frame = frame.reset_index(drop=True)
    return _Rows(frame["id"], frame[source], answers)


def _predict(name: str, memory: Memory, rules: Rules, rows: _Rows) -> pd.Series:
    use_memory, use_context, use_rules = _CANDIDATES[name]
    if not use_memory:
        return rows.tokens
    tokens = rows.tokens.to_numpy(dtype=object)
    previous = rows.previous.to_numpy(dtype=object)
    said = memory.recall_all(previous, tokens, use_context)
    unknown = np.flatnonzero(pd.isna(said))
    if use_rules:
        spoken: dict[tuple[str, str], str | None] = {}  # an unseen token repeats (a new year, a name)
        for i in unknown:
            key = (tokens[i], previous[i] if use_context else "")
            if key not in spoken:
                spoken[key] = rules.say(*key)
            said[i] = spoken[key]
        unknown = unknown[pd.isna(said[unknown])]
    said[unknown] = tokens[unknown]
    return pd.Series(said, dtype=object)


def _memorise(rows: _Rows) -> Memory:
    assert rows.answers is not None
    return memorise(rows.previous, rows.tokens, rows.answers)


def _fit_rules(rows: _Rows) -> Rules:
    assert rows.answers is not None
    tokens, answers, previous = (s.iloc[:_RULE_ROWS] for s in (rows.tokens, rows.answers, rows.previous))
    # Only tokens with a shape reach the rules (a digit or a capital): the rest are most rows.
    shaped = tokens.str.contains(MAY_HAVE_SHAPE.pattern, regex=True).to_numpy(dtype=bool)
    return fit_rules(list(zip(tokens[shaped].tolist(), answers[shaped].tolist())), previous[shaped].tolist())


def solve_texts(workspace: Path, out: Path, budget: float | None, seed: int, light: bool) -> dict:
    """Every candidate scored on held-out rows; the best, refitted on all, submitted."""
    began = time.monotonic()
    setup = workspace / "setup"
    target = text_target(setup) or {}
    column = str(target["column"])
    metric = load_setup_module(SetupLayout(setup).module("metric"), "agentk_setup_metric")
    submission = load_setup_module(SetupLayout(setup).module("submission"), "agentk_setup_submission")
    higher = bool(metric.HIGHER_IS_BETTER)
    train = _read(setup, "train", target, LIGHT_ROWS if light else None)
    test = _read(setup, "test", target, None)
    assert train.answers is not None
    cut = len(train.ids) - max(1, int(round(_HELD_OUT * len(train.ids))))
    fit, held = train.part(slice(None, cut)), train.part(slice(cut, None))
    emit("start", n_train=len(train.ids), n_test=len(test.ids), held_out_rows=len(held.ids), task=TEXT_TASK)

    def score(rows: _Rows, predicted: pd.Series) -> float:
        # Row positions as ids, the same on both sides: the metric has nothing to align.
        positions = np.arange(len(rows.ids))
        truth = pd.DataFrame({"id": positions, column: rows.answers})
        return float(metric.score(truth, pd.DataFrame({"id": positions, column: predicted.to_numpy()})))

    # Fitted after the input itself is submitted (seconds), on the rows before the held-out ones;
    # `full` on every training row once a model is adopted.
    held_fit: tuple[Memory, Rules] | None = None
    full: tuple[Memory, Rules] | None = None
    race: list[dict[str, Any]] = []
    cv: dict[str, float | None] = {}
    timeline: list[tuple[float, float]] = []
    best: tuple[str, float] | None = None
    submitted: tuple[str, float] | None = None  # the light check submits the input alone
    first_submission: float | None = None
    direction = Direction(higher)
    fingerprint = setup_fingerprint(setup, test.ids.tolist())
    for name in _CANDIDATES:
        if budget is not None and best is not None and time.monotonic() - began > 0.8 * budget:
            race.append({"family": name, "status": "skipped", "reason": "the budget is spent"})
            continue
        started = time.monotonic()
        if held_fit is None and _CANDIDATES[name][0]:
            held_fit = (_memorise(fit), _fit_rules(fit))
        value = score(held, _predict(name, *held_fit, held) if held_fit else held.tokens)
        cv[name] = value
        race.append({"family": name, "status": "finished", "first_fold_score": value,
                     "seconds": round(time.monotonic() - started, 2)})
        emit("candidate", model=name, score=value)
        if best is None or direction.better(value, best[1]):
            best = (name, value)
            if name == "keep_input" or not light:
                # The input itself goes first (valid in seconds); a better candidate replaces it.
                if full is None and _CANDIDATES[name][0]:
                    full = (_memorise(train), _fit_rules(train))
                predicted = _predict(name, *full, test) if full is not None else test.tokens
                formatted = submission.format_submission(pd.DataFrame({"id": test.ids, column: predicted.to_numpy()}))
                record = SubmissionRecord(model=name, validation_score=value, metric="setup", higher_is_better=higher,
                                          setup_fingerprint=fingerprint)
                adoption = adopt_submission(out, lambda tmp: formatted.to_csv(tmp, index=False), record, force=light)
                first_submission = first_submission or time.monotonic() - began
                timeline.append((round(time.monotonic() - began, 3), value))
                emit("submission" if adoption.written else "submission_kept", path=str(out), model=name,
                     validation_score=value, reason=adoption.reason)
                submitted = best
    assert submitted is not None  # the input itself, at least
    predictions = workspace / "solve" / "predictions"
    predictions.mkdir(parents=True, exist_ok=True)
    rules_found = (full or held_fit or (None, Rules()))[1].to_json()
    with replacing(predictions / "text_rules.json") as tmp:
        tmp.write_text(json.dumps(rules_found, indent=2))
    elapsed = round(time.monotonic() - began, 3)
    record = SolveResult.model_validate({
        "validation_score": submitted[1], "model": submitted[0], "models_per_target": {column: submitted[0]},
        "submission_from": "this_solve", "higher_is_better": higher, "metric": "setup", "cv": cv, "race": race,
        "validation": {"kind": "held-out rows", "rows": len(held.ids), "rules": rules_found},
        "folds": 1, "n_train": len(train.ids), "n_test": len(test.ids), "light": light, "seed": seed,
        "time_budget_s": budget, "submission_path": str(out), "elapsed_s": elapsed,
        "time_to_first_submission_s": round(first_submission or 0.0, 3), "timeline": timeline,
        "candidates": [], "task": TEXT_TASK,
    }).to_json()
    atomic_write_json(SolveResult.path_in(workspace / "solve"), record)
    emit("done", validation_score=submitted[1], model=submitted[0], elapsed_s=elapsed)
    return record
