"""Text to text, recognised by structure: the target is a text column equal to one input text
column on most training rows (token normalisation keeps most tokens as written; spelling and
transliteration keep many words), with far more distinct values than classes could have.
"""

from __future__ import annotations

import pandas as pd

from agentk.core.artifacts import TEXT_TASK

KEPT_SHARE = 0.3  # of training rows whose target repeats the input: below it the input is no draft
MIN_DISTINCT = 50  # distinct targets: fewer are classes, however many rows repeat an input


def rewritten_input(train: pd.DataFrame, test: pd.DataFrame | None, target: str,
                    skip: set[str]) -> tuple[str, float] | None:
    """The input column `target` rewrites and the share of training rows it keeps as written; None
    when no input column is a draft of it."""
    truth = train[target].astype(str).str.strip()
    present = truth != ""
    if int(present.sum()) < 2 or truth[present].nunique() < MIN_DISTINCT:
        return None
    best: tuple[str, float] | None = None
    for column in train.columns:
        if column in skip or column == target or (test is not None and column not in test.columns):
            continue
        kept = float((train[column].astype(str).str.strip()[present] == truth[present]).mean())
        if kept >= KEPT_SHARE and (best is None or kept > best[1]):
            best = (column, kept)
    return best


def describe(target: str, source: str, kept: float) -> str:
    return (f"text to text ({TEXT_TASK}): {target!r} rewrites the input {source!r}, keeping it as written on "
            f"{kept:.0%} of training rows; the rest is learnt from the training pairs and by rules")
