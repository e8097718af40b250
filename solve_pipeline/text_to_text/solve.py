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

import pandas as pd

from agentk.core.artifacts import TEXT_TASK, SetupLayout
from agentk.core.maps import read_map
from agentk.core.metrics.direction import Direction
from agentk.core.results import SolveResult
from agentk.core.workspace import atomic_write_json, replacing
from solve_pipeline.cv import emit
from solve_pipeline.setup_modules import load_setup_module
from solve_pipeline.submission_record import SubmissionRecord, adopt_submission, setup_fingerprint
from solve_pipeline.text_to_text.memory import memorise
from solve_pipeline.text_to_text.rules import Rules, fit_rules

_HELD_OUT = 0.2
LIGHT_ROWS = 20_000
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
    ids: list[str]
    tokens: list[str]
    answers: list[str] | None

    @property
    def previous(self) -> list[str]:
        # The map keeps the files' row order: the row before is the token before (a sentence's
        # first token gets the last of the sentence before, which context rarely matches).
        return [""] + self.tokens[:-1]


def _read(setup: Path, split: str, target: dict, limit: int | None) -> _Rows:
    layout = SetupLayout(setup)
    source = str(target["source"])
    frames = [read_map(p, text=True) for p in layout.input_maps(split)]
    frame = next((f for f in frames if source in f.columns), None)
    if frame is None:
        raise ValueError(f"no {split} input map holds the text column {source!r}")
    answers = None
    if split == "train":
        truth = read_map(layout.target_map, text=True).drop_duplicates("id").set_index("id")[target["column"]]
        frame = frame[frame["id"].isin(truth.index)]
        if limit is not None:
            frame = frame.head(limit)
        answers = truth.loc[frame["id"]].astype(str).tolist()
    return _Rows(frame["id"].astype(str).tolist(), frame[source].astype(str).tolist(), answers)


def _predict(name: str, train: _Rows, rows: _Rows, rules: Rules | None) -> list[str]:
    use_memory, use_context, use_rules = _CANDIDATES[name]
    if not use_memory:
        return list(rows.tokens)
    assert train.answers is not None
    memory = memorise(train.previous, train.tokens, train.answers)
    out = []
    for previous, token in zip(rows.previous, rows.tokens):
        said = memory.recall(previous, token, use_context)
        if said is None and use_rules and rules is not None:
            said = rules.say(token, previous if use_context else "")
        out.append(token if said is None else said)
    return out


def _accuracy(truth: list[str], predicted: list[str]) -> float:
    return sum(t == p for t, p in zip(truth, predicted)) / max(len(truth), 1)


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
    fit = _Rows(train.ids[:cut], train.tokens[:cut], train.answers[:cut])
    held = _Rows(train.ids[cut:], train.tokens[cut:], train.answers[cut:])
    emit("start", n_train=len(train.ids), n_test=len(test.ids), held_out_rows=len(held.ids), task=TEXT_TASK)

    def score(rows: _Rows, predicted: list[str]) -> float:
        truth = pd.DataFrame({"id": rows.ids, column: rows.answers})
        return float(metric.score(truth, pd.DataFrame({"id": rows.ids, column: predicted})))

    held_rules = fit_rules(list(zip(fit.tokens, fit.answers or [])), fit.previous)
    race: list[dict[str, Any]] = []
    cv: dict[str, float | None] = {}
    timeline: list[tuple[float, float]] = []
    best: tuple[str, float] | None = None
    first_submission: float | None = None
    direction = Direction(higher)
    for name in _CANDIDATES:
        if budget is not None and best is not None and time.monotonic() - began > 0.8 * budget:
            race.append({"family": name, "status": "skipped", "reason": "the budget is spent"})
            continue
        started = time.monotonic()
        value = score(held, _predict(name, fit, held, held_rules))
        cv[name] = value
        race.append({"family": name, "status": "finished", "first_fold_score": value,
                     "seconds": round(time.monotonic() - started, 2)})
        emit("candidate", model=name, score=value)
        if best is None or direction.better(value, best[1]):
            best = (name, value)
            if name == "keep_input" or not light:
                # The input itself goes first (valid in seconds); a better candidate replaces it.
                rules = fit_rules(list(zip(train.tokens, train.answers)), train.previous) if _CANDIDATES[name][2] else None
                predicted = _predict(name, train, test, rules)
                formatted = submission.format_submission(pd.DataFrame({"id": test.ids, column: predicted}))
                record = SubmissionRecord(model=name, validation_score=value, metric="setup", higher_is_better=higher,
                                          setup_fingerprint=setup_fingerprint(setup, test.ids))
                adoption = adopt_submission(out, lambda tmp: formatted.to_csv(tmp, index=False), record, force=light)
                first_submission = first_submission or time.monotonic() - began
                timeline.append((round(time.monotonic() - began, 3), value))
                emit("submission" if adoption.written else "submission_kept", path=str(out), model=name,
                     validation_score=value, reason=adoption.reason)
    assert best is not None
    predictions = workspace / "solve" / "predictions"
    predictions.mkdir(parents=True, exist_ok=True)
    with replacing(predictions / "text_rules.json") as tmp:
        tmp.write_text(json.dumps(held_rules.to_json(), indent=2))
    elapsed = round(time.monotonic() - began, 3)
    record = SolveResult.model_validate({
        "validation_score": best[1], "model": best[0], "models_per_target": {column: best[0]},
        "submission_from": "this_solve", "higher_is_better": higher, "metric": "setup", "cv": cv, "race": race,
        "validation": {"kind": "held-out rows", "rows": len(held.ids), "rules": held_rules.to_json()},
        "folds": 1, "n_train": len(train.ids), "n_test": len(test.ids), "light": light, "seed": seed,
        "time_budget_s": budget, "submission_path": str(out), "elapsed_s": elapsed,
        "time_to_first_submission_s": round(first_submission or 0.0, 3), "timeline": timeline,
        "candidates": [], "task": TEXT_TASK,
    }).to_json()
    atomic_write_json(SolveResult.path_in(workspace / "solve"), record)
    emit("done", validation_score=best[1], model=best[0], elapsed_s=elapsed)
    return record
