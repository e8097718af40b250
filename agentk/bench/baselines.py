"""Reference scores a run must beat: the best constant prediction, computed by the grader side.

It reads the answers (the agent never calls this), so the constant is the strongest one possible:
the majority label, the class frequencies, or the mean/median value of the answers; for image
outputs (masks, boxes) the empty one.
"""

from __future__ import annotations

import pandas as pd

from agentk.grading import grade_submission
from agentk.core.metrics import SPATIAL_KINDS, get_metric
from agentk.sources.base import Competition


def constant_score(competition: Competition) -> float | None:
    facts = competition.grading
    if facts is None or not competition.has_answers:
        return None
    answers = competition.answers()
    submission = pd.DataFrame({facts.id_column: answers[facts.id_column]})
    kind = get_metric(facts.metric).kind
    if facts.label_column is not None:
        shares = answers[facts.label_column].astype(str).value_counts(normalize=True)
        for label, share in shares.items():
            submission[label] = share
    else:
        for column in facts.target_columns:
            values = answers[column]
            numeric = pd.to_numeric(values, errors="coerce")
            if kind in SPATIAL_KINDS:
                submission[column] = ""
            elif kind == "value" and numeric.notna().all():
                submission[column] = float(numeric.median())
            elif kind == "proba" and numeric.notna().all():
                submission[column] = float(numeric.mean())
            else:
                submission[column] = values.mode().iloc[0]
    report = grade_submission(submission, answers, facts, competition.id)
    return report.score
