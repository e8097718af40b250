"""Local layout: `description.md`, `data/`, optional `competition.toml` and `private/answers.csv`.

With `answers = "split"` the harness holds out part of `data/train.csv` (MLE-bench convention)
and the agent gets the rest as its train set, the held-out rows without targets as its test set,
and a sample submission only if Kaggle shipped one (otherwise the format is in the description).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from agentk.core.errors import SourceError
from agentk.sources import common
from agentk.sources.base import Competition, GradingFacts

TOML_NAME = "competition.toml"
DEFAULT_ANSWERS = "private/answers.csv"


@dataclass(frozen=True)
class _Split:
    """Where and how the held-out part of the train file comes from."""

    train: Path
    test: Path | None  # the original test file, whose columns the agent's test keeps
    sample: Path | None
    fraction: float
    seed: int


def load_local(root: Path) -> Competition:
    """Read a local competition folder; raises SourceError (one line) if it is incomplete."""
    description = root / common.DESCRIPTION_NAME
    data = root / "data"
    if not description.is_file():
        raise SourceError(f"{description} is missing: a local competition needs description.md and data/")
    if not data.is_dir() or not any(data.iterdir()):
        raise SourceError(f"{data} is missing or empty: a local competition needs its data files there")

    config = _read_config(root)
    meta = config.get("competition", {})
    comp_id = str(meta.get("id") or root.name)
    fallback_title = common.humanise(comp_id)
    text = common.read_description(description, common.DESCRIPTION_NAME)
    title = str(meta.get("title") or common.title_from_description(text, fallback_title))
    grading_table = config.get("grading")
    grading = common.parse_grading(grading_table, TOML_NAME) if grading_table else None
    stamp_files = [description, root / TOML_NAME]

    answers_spec = _answers_spec(root, grading_table or {})
    if grading is None or answers_spec is None:
        prepare = _copy_preparer(root, stamp_files)
        return Competition(comp_id, "local", root, title, grading, prepare, None)
    if answers_spec == "split":
        split = _split_spec(root, grading_table or {}, grading)
        return Competition(
            comp_id, "local", root, title, grading,
            prepare_fn=_split_preparer(root, split, grading, stamp_files),
            answers_fn=lambda: _held_out_answers(split, grading),
        )
    answers_path = _answers_file(root, answers_spec, grading)
    return Competition(
        comp_id, "local", root, title, grading,
        prepare_fn=_copy_preparer(root, stamp_files),
        answers_fn=lambda: common.read_csv_exact(answers_path, answers_spec),
    )


# ---------------------------------------------------------------- configuration


def _read_config(root: Path) -> dict[str, Any]:
    path = root / TOML_NAME
    return common.read_toml(path, TOML_NAME) if path.is_file() else {}


def _answers_spec(root: Path, grading_table: dict[str, Any]) -> str | None:
    """'split', a relative answers path, or None when there is nothing to grade against."""
    spec = grading_table.get("answers")
    if spec is None:
        return DEFAULT_ANSWERS if (root / DEFAULT_ANSWERS).is_file() else None
    if not isinstance(spec, str) or not spec:
        raise SourceError(f"{TOML_NAME} [grading] 'answers' must be \"split\" or a relative path")
    return spec


def _answers_file(root: Path, spec: str, grading: GradingFacts) -> Path:
    path = (root / spec).resolve()
    if not path.is_file():
        raise SourceError(f"answers file not found: {root / spec}")
    # The agent sees all of data/: answers there would be handed to it.
    if path.is_relative_to((root / "data").resolve()):
        raise SourceError(f"answers file {spec} is inside data/, which the agent sees")
    _require_columns(common.read_csv_header(path, spec), _graded_columns(grading), spec)
    return path


def _split_spec(root: Path, table: dict[str, Any], grading: GradingFacts) -> _Split:
    data = root / "data"
    train = common.find_train_csv(data)
    if train is None:
        raise SourceError(f"answers = \"split\" needs a train CSV in {data} (expected train.csv)")
    fraction = table.get("split_test_fraction", 0.1)
    seed = table.get("split_seed", 0)
    if not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise SourceError(f"{TOML_NAME} [grading] split_test_fraction must be between 0 and 1")
    if not isinstance(seed, int):
        raise SourceError(f"{TOML_NAME} [grading] split_seed must be an integer")
    shown = f"data/{train.name}"
    header = common.read_csv_header(train, shown)
    _require_columns(header, _graded_columns(grading), shown)
    test = common.find_test_csv(data)
    if test is not None:
        known = set(header)  # a set: a list made 20,000 columns a quadratic search
        missing = [c for c in common.read_csv_header(test, f"data/{test.name}") if c not in known]
        if missing:
            raise SourceError(f"data/{test.name} has columns that data/{train.name} lacks: {missing}")
    return _Split(train, test, common.find_sample_csv(data), float(fraction), seed)


def _graded_columns(grading: GradingFacts) -> list[str]:
    label = [grading.label_column] if grading.label_column else []
    return [grading.id_column, *grading.target_columns, *label]


def _require_columns(header: list[str], needed: list[str], shown: str) -> None:
    missing = [c for c in needed if c not in header]
    if missing:
        raise SourceError(f"{shown} lacks the graded columns {missing} (from {TOML_NAME})")


# ---------------------------------------------------------------- preparing the agent's view


def _copy_preparer(root: Path, stamp_files: list[Path]) -> Callable[[Path], list[str]]:
    """data/ as it is (image folders included) plus description.md."""

    def prepare(raw_dir: Path) -> list[str]:
        warnings: list[str] = []

        def build(out: Path) -> None:
            warnings.extend(common.copy_tree(root / "data", out / "data").warnings("data"))
            (out / common.DESCRIPTION_NAME).write_bytes(_description_bytes(root))

        stamp = common.fingerprint(stamp_files, [root / "data"], extra=f"local-copy {root.resolve()}")
        common.build_atomically(Path(raw_dir), stamp, build)
        return warnings

    return prepare


def _split_preparer(
    root: Path, split: _Split, grading: GradingFacts, stamp_files: list[Path]
) -> Callable[[Path], list[str]]:
    def prepare(raw_dir: Path) -> list[str]:
        warnings: list[str] = []

        def build(out: Path) -> None:
            data_out = out / "data"
            # Other files (data_description.txt, image folders) go as they are; the original
            # test and sample are replaced by the held-out versions.
            replaced = [p for p in (split.train, split.test, split.sample) if p is not None]
            warnings.extend(common.copy_tree(root / "data", data_out, skip=replaced).warnings("data"))
            kept, held = _split_rows(split)
            common.write_csv_exact(kept, data_out / split.train.name)
            test_columns = _test_columns(split, list(kept.columns), grading)
            test_name = split.test.name if split.test else "test.csv"
            common.write_csv_exact(held[test_columns], data_out / test_name)
            if split.sample is not None:
                sample = _held_out_sample(split.sample, held, grading)
                common.write_csv_exact(sample, data_out / split.sample.name)
            (out / common.DESCRIPTION_NAME).write_bytes(_description_bytes(root))

        extra = f"local-split {root.resolve()} {split.fraction} {split.seed}"
        common.build_atomically(Path(raw_dir), common.fingerprint(stamp_files, [root / "data"], extra), build)
        return warnings

    return prepare


def _description_bytes(root: Path) -> bytes:
    # Written as UTF-8 whatever the source's encoding: every reader downstream reads UTF-8.
    return common.read_description(root / common.DESCRIPTION_NAME, common.DESCRIPTION_NAME).encode("utf-8")


def _split_rows(split: _Split, columns: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train's rows kept and held out; of `columns` alone when given (the answers need two of a
    table's 20,000, and reading and taking rows cost per column)."""
    shown = f"data/{split.train.name}"
    df = common.read_csv_exact(split.train, shown, columns)
    if len(df) < 2:
        raise SourceError(f"{shown} has {len(df)} rows: too few to hold any out for grading")
    return held_out_split(df if columns is None else df[columns], split.fraction, split.seed)


def held_out_split(df: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """scikit-learn's `train_test_split(df, test_size=fraction, random_state=seed)`, row for row
    (MLE-bench's convention, no stratification, so held-out sets match theirs), without importing
    scikit-learn, which costs a run seconds."""
    n_held = math.ceil(fraction * len(df))
    order = np.random.RandomState(seed).permutation(len(df))
    return df.iloc[order[n_held:]], df.iloc[order[:n_held]]


def _test_columns(split: _Split, train_columns: list[str], grading: GradingFacts) -> list[str]:
    if split.test is not None:
        return common.read_csv_header(split.test, f"data/{split.test.name}")
    graded = set(grading.target_columns) | {grading.label_column}
    return [c for c in train_columns if c not in graded]


def _held_out_sample(sample_path: Path, held: pd.DataFrame, grading: GradingFacts) -> pd.DataFrame:
    """Kaggle's sample, re-made for the held-out ids with its first row's placeholders."""
    original = common.read_csv_exact(sample_path, f"data/{sample_path.name}")
    columns = list(original.columns)
    id_col = grading.id_column if grading.id_column in columns else columns[0]
    placeholders = original.iloc[0] if len(original) else pd.Series("", index=columns)
    sample = pd.DataFrame({c: [placeholders[c]] * len(held) for c in columns}, columns=columns, dtype=str)
    sample[id_col] = held[grading.id_column].to_numpy()
    return sample


def _held_out_answers(split: _Split, grading: GradingFacts) -> pd.DataFrame:
    # Recomputed from the source each call: the answers are never written anywhere.
    _, held = _split_rows(split, _graded_columns(grading))
    return held.reset_index(drop=True)
