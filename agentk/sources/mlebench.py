"""MLE-bench prepared layout: `prepared/public/` (what the agent sees: train, test, sample
submission, description.md, maybe more) and `prepared/private/test.csv` (the answers).

MLE-bench ships no grading facts, so unless a competition.toml sits beside `prepared/` they are
derived: columns from the sample submission and the answers, the metric from the description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from agentk.core import metrics
from agentk.core.errors import SourceError
from agentk.sources import common
from agentk.sources.base import LEADERBOARD_NAMES, Competition, GradingFacts

TOML_NAME = "competition.toml"


def load_mlebench(prepared: Path) -> Competition:
    """Read an MLE-bench `prepared/` folder (or any folder holding public/ and private/)."""
    public = prepared / "public"
    if not public.is_dir():
        raise SourceError(f"{public} is missing: an MLE-bench prepared folder needs public/ and private/")
    comp_id = prepared.parent.name if prepared.name == "prepared" else prepared.name
    description = _find_description(prepared)
    text = common.read_description(description, str(description.relative_to(prepared)))
    answers = _find_answers(prepared / "private")
    sample = common.find_sample_csv(public)

    config = _read_config(prepared)
    given_title = config.get("competition", {}).get("title")
    title = str(given_title or common.title_from_description(text, common.humanise(comp_id)))
    if config.get("grading"):
        grading: GradingFacts | None = common.parse_grading(config["grading"], TOML_NAME)
    elif answers is not None:
        grading = derive_grading(text, sample, answers)
    else:
        grading = None

    answers_fn = (lambda: common.read_csv_exact(answers, "private/" + answers.name)) if answers else None
    prepare = _preparer(prepared, public, description)
    return Competition(comp_id, "mlebench", prepared, title, grading, prepare, answers_fn)


def _find_description(prepared: Path) -> Path:
    for path in (prepared / "public" / common.DESCRIPTION_NAME, prepared / common.DESCRIPTION_NAME):
        if path.is_file():
            return path
    raise SourceError(f"{prepared / 'public' / common.DESCRIPTION_NAME} is missing")


def _find_answers(private: Path) -> Path | None:
    """MLE-bench names the answers private/test.csv; a few competitions use another single CSV."""
    if not private.is_dir():
        return None
    leaderboards = {Path(name).name for name in LEADERBOARD_NAMES}
    csvs = sorted(p for p in private.iterdir()
                  if p.is_file() and p.suffix.lower() == ".csv" and p.name.lower() not in leaderboards)
    preferred = [p for p in csvs if p.name.lower() in ("test.csv", "answers.csv")]
    return (preferred or (csvs if len(csvs) == 1 else []) or [None])[0]


def _read_config(prepared: Path) -> dict:
    """A competition.toml beside prepared/ (MLE-bench's <id>/ folder) or inside it."""
    candidates = [prepared / TOML_NAME]
    if prepared.name == "prepared":
        candidates.insert(0, prepared.parent / TOML_NAME)
    for path in candidates:
        if path.is_file():
            return common.read_toml(path, str(path))
    return {}


def _preparer(prepared: Path, public: Path, description: Path) -> Callable[[Path], list[str]]:
    def prepare(raw_dir: Path) -> list[str]:
        warnings: list[str] = []

        def build(out: Path) -> None:
            notes = common.copy_tree(public, out / "data", skip=[public / common.DESCRIPTION_NAME])
            warnings.extend(notes.warnings("public"))
            (out / common.DESCRIPTION_NAME).write_bytes(common.read_description(description, common.DESCRIPTION_NAME).encode("utf-8"))

        stamp = common.fingerprint([description], [public], extra=f"mlebench {prepared.resolve()}")
        common.build_atomically(Path(raw_dir), stamp, build)
        return warnings

    return prepare


# ---------------------------------------------------------------- deriving grading facts


def derive_grading(description: str, sample: Path | None, answers: Path) -> GradingFacts | None:
    """Grading facts from the sample's and answers' columns plus the metric the description
    names; None when either cannot be worked out (answers stay available)."""
    truth = common.read_csv_exact(answers, "private/" + answers.name)
    answer_cols = list(truth.columns)
    sample_cols = common.read_csv_header(sample, f"public/{sample.name}") if sample else []
    id_col = (sample_cols or answer_cols)[0]
    if id_col not in answer_cols:
        return None
    answer_rest = [c for c in answer_cols if c != id_col]
    sample_rest = [c for c in sample_cols if c != id_col]
    if not answer_rest:
        return None

    if sample and set(answer_rest) == set(sample_rest):
        targets, label = tuple(sample_rest), None
        n_classes: int | None = int(truth[targets[0]].nunique()) if len(targets) == 1 else None
    elif len(answer_rest) == 1 and (not sample or _are_class_columns(sample_rest, truth[answer_rest[0]])):
        targets, label = (), answer_rest[0]
        n_classes = len(sample_rest) or int(truth[label].nunique())
    else:
        return None

    metric = _detect_metric(description, n_classes)
    if metric is None:
        return None
    name, higher, kind = metric
    if not sample and label is not None and not (kind == "proba" and n_classes > 2):
        # Without a sample, one answer column is a per-class probability submission only when the
        # metric grades class probabilities over several classes; otherwise it is predicted as is.
        targets, label = (label,), None
    return GradingFacts(name, higher, id_col, targets, label)


def _are_class_columns(columns: list[str], labels: pd.Series) -> bool:
    """The sample has one column per class: the answers' labels are among its column names.
    (A held-out set may not contain every class, so subset, not equality.)"""
    return len(columns) >= 2 and set(labels.unique()) <= set(columns)


def _detect_metric(description: str, n_classes: int | None) -> tuple[str, bool, str] | None:
    """(canonical name, higher_is_better, kind) of the metric the description names."""
    name = metrics.detect_metric(description)
    if name is None:
        return None
    metric = metrics.get_metric(metrics.for_task(name, n_classes))
    return metric.name, bool(metric.higher_is_better), str(metric.kind)
