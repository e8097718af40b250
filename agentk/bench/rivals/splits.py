"""Repeated held-out splits: the same competition graded on splits with seeds 0..N-1.

A 90-row held-out set (titanic) is noisy, so the bench repeats each split competition over several
seeds. The runner loads its competition from a source folder, so each split gets a folder of its
own: a link to the original data/, copies of description.md and of competition.toml, the latter's
`split_seed` is the split's. Everything downstream (the agent's view, the answers, the grader)
follows from that folder, and the competition id stays the same.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from agentk.core.errors import SourceError

TOML_NAME = "competition.toml"
_SEED_LINE = re.compile(r"^\s*split_seed\s*=.*$", re.MULTILINE)
_FRACTION_LINE = re.compile(r"^\s*split_test_fraction\s*=.*$", re.MULTILINE)
_GRADING_HEADER = re.compile(r"^\s*\[grading\]\s*$", re.MULTILINE)


def is_resplittable(source: Path) -> bool:
    """A local competition whose answers are held out of data/train.csv (answers = "split")."""
    toml = Path(source) / TOML_NAME
    if not toml.is_file() or not (Path(source) / "data").is_dir():
        return False
    try:
        grading = tomllib.loads(toml.read_text(encoding="utf-8")).get("grading", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(grading, dict) and grading.get("answers") == "split"


def split_source(source: Path, seed: int, root: Path, fraction: float | None = None) -> Path:
    """`root/split<seed>/<name>`: the competition with `split_seed = seed` (and, given one,
    `split_test_fraction = fraction`); rebuilt idempotently."""
    source = Path(source).resolve()
    if not is_resplittable(source):
        raise SourceError(f"{source} does not hold out answers from its train file (answers = \"split\"): it cannot be re-split")
    folder = Path(root).resolve() / f"split{seed}" / source.name
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "data"
    if not (link.is_symlink() and Path(os.readlink(link)) == source / "data"):
        if link.is_symlink() or link.is_file():
            link.unlink()
        link.symlink_to(source / "data")
    # A copy, not a link: sources refuse a description that links out of its folder.
    _write_if_changed(folder / "description.md", (source / "description.md").read_text(encoding="utf-8"))
    text = (source / TOML_NAME).read_text(encoding="utf-8")
    if _SEED_LINE.search(text):
        text = _SEED_LINE.sub(f"split_seed = {seed}", text, count=1)
    else:
        text = _GRADING_HEADER.sub(f"[grading]\nsplit_seed = {seed}", text, count=1)
    if fraction is not None:
        if _FRACTION_LINE.search(text):
            text = _FRACTION_LINE.sub(f"split_test_fraction = {fraction}", text, count=1)
        else:
            text = _GRADING_HEADER.sub(f"[grading]\nsplit_test_fraction = {fraction}", text, count=1)
    _write_if_changed(folder / TOML_NAME, text)
    return folder


def _write_if_changed(target: Path, text: str) -> None:
    # Same bytes, same file: the prepared view's fingerprint reads it, so an untouched split is reused.
    if target.is_symlink():
        target.unlink()
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
