"""Feature code that earned its place, kept in the experience memory for later, similar tasks.

The LLM solve policy keeps a feature block only when it improves the best family's CV beyond noise
(solve_pipeline/llm/feature_trial.py). Such a block is stored as an experience of its own stage
(`solve_feature`), found again by the task's shape in words (metric, targets, columns and their
types), and offered in a later task's solve prompt with the gain it had.
"""

from __future__ import annotations

from collections.abc import Iterable

from curriculum.experience import Experience, ExperienceStore

FEATURE_STAGE = "solve_feature"
MAX_COLUMNS_IN_TEXT = 40


def task_text(metric: str, targets: Iterable[str], columns: dict[str, str]) -> str:
    """A task's shape in words: what a kept block is stored under and searched by."""
    named = [f"{name} ({kind})" for name, kind in list(columns.items())[:MAX_COLUMNS_IN_TEXT] if name != "id"]
    return f"metric {metric}; predicting {', '.join(targets)}; tabular columns {', '.join(named)}"


def remember_features(store: ExperienceStore, competition: str, text: str, kept: Iterable[tuple[str, str]]) -> int:
    """Store (code, gain in words) pairs; returns how many were new."""
    # The gain goes first: the embedding reads the text's tail, which is the task's shape.
    return store.add(Experience(competition=competition, stage=FEATURE_STAGE, error=f"{gain}\n{text}", fix_code=code,
                                fixed=True, policy="llm_solve") for code, gain in kept)


def similar_features(store: ExperienceStore, text: str, k: int = 3, exclude_competition: str | None = None) -> list[str]:
    """Kept blocks of the nearest other tasks, each as a line of context and its code."""
    hits = store.nearest(FEATURE_STAGE, text, k=k, fixed=True, exclude_competition=exclude_competition)
    tips = []
    for experience, _ in hits:
        gain = experience.error.splitlines()[0] if experience.error else ""
        tips.append(f"On {experience.competition} ({gain}):\n```python\n{experience.fix_code.strip()}\n```")
    return tips
