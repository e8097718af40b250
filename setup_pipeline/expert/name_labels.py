"""Train files whose labels are in their names (`cat.0.jpg`, `dog_17.png`, `golden_retriever-3.jpg`,
`20090328_000000_002s3ms_TRAIN0_1.aif`), beside test files whose names carry no label (`1.jpg`,
`..._Test0.aif`): the label is the part of the stem before a separator, or the last part after one,
recognised by structure alone. Pictures and sound clips alike.

A reading of a folder is a separator (`.`, `_` or `-`) and where the label is: a prefix ending at the
separator's first or last occurrence, or a suffix after its last. It holds when nearly every stem
splits so, into 2..200 labels that each recur (an id is not a label: `img_0001` everywhere gives one
"label", `a3f9_1` gives one per file), and the test folder's names do not split into recurring
labels the same way (a naming scheme shared by train and test, `IMG_0001` or a recording's date, is
not a label either).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SEPARATORS = (".", "_", "-")
MAX_LABELS = 200
MIN_PER_LABEL = 2  # every label recurs ...
MIN_MEAN_PER_LABEL = 5  # ... and holds several images on average
MAX_UNLABELLED = 0.01  # stray files whose names do not split (a README image, a thumbnail)

# Where in the stem the label is: before the separator's first occurrence, before its last (a
# multi-word label, `golden_retriever_12`), or after its last (`..._TRAIN0_1`).
Position = Literal["first", "last", "suffix"]
POSITIONS: tuple[Position, ...] = ("first", "last", "suffix")


@dataclass(frozen=True)
class NameLabels:
    """A folder of train files labelled by their names, and the folder of test files."""

    train_dir: Path
    pattern: str  # matched against a file stem; its group "label" is the label
    separator: str
    counts: dict[str, int]  # label -> files, labels sorted
    test_dir: Path | None
    suffix: bool = False  # the label is the stem's last part, not its first

    def label_of(self, stem: str) -> str | None:
        found = re.match(self.pattern, stem)
        return found.group("label") if found else None

    def describe(self, raw: Path) -> str:
        shown = ", ".join(f"{label} {n:,}" for label, n in list(self.counts.items())[:12])
        more = f", ... ({len(self.counts)} labels)" if len(self.counts) > 12 else ""
        where = f"suffixes after the last {self.separator!r}" if self.suffix else f"prefixes before {self.separator!r}"
        return (f"labels are the file-name {where} under "
                f"{self.train_dir.relative_to(raw).as_posix()}/: {shown}{more}")


def label_pattern(separator: str, position: Position) -> str:
    """A regex on a stem whose group "label" is the label at `position` (see `Position`)."""
    sep = re.escape(separator)
    return {"first": rf"^(?P<label>[^{sep}]+){sep}.+$",
            "last": rf"^(?P<label>.+){sep}[^{sep}]+$",
            "suffix": rf"^.+{sep}(?P<label>[^{sep}]+)$"}[position]


@dataclass(frozen=True)
class _Reading:
    pattern: str
    separator: str
    suffix: bool
    counts: Counter
    digit_rests: float  # share of stems whose part beside the label is a number, as ids are


def _read(stems: list[str], separator: str, position: Position) -> _Reading | None:
    pattern = label_pattern(separator, position)
    compiled = re.compile(pattern)
    labels, digit_rests, fielded_rests = [], 0, 0
    for stem in stems:
        found = compiled.match(stem)
        if found:
            labels.append(found.group("label"))
            rest = stem[:found.start("label") - 1] if position == "suffix" else stem[found.end("label") + 1:]
            digit_rests += rest.isdigit()
            fielded_rests += separator in rest
    counts = Counter(labels)
    if len(stems) - len(labels) > MAX_UNLABELLED * len(stems) or not 2 <= len(counts) <= MAX_LABELS:
        return None
    if min(counts.values()) < MIN_PER_LABEL or len(labels) < MIN_MEAN_PER_LABEL * len(counts):
        return None
    if position == "suffix" and all(label.isdigit() for label in counts) and fielded_rests < 0.5 * len(labels):
        # A number after a lone id counts the id's files (`a3f9_2`, its second shot); a number that
        # closes a name of several fields (`<day>_<time>_TRAIN7_1`) is a field of its own.
        return None
    return _Reading(pattern, separator, position == "suffix", counts, digit_rests / len(labels))


def _readings(stems: list[str]) -> list[_Reading]:
    """Every reading that holds for the stems, the likeliest first: the part beside a label is
    most often a number, so between two readings the one leaving the number alone (keeping a
    multi-word label whole, or not taking a per-class count for a label) comes first; then the
    fewer labels."""
    readings = [r for sep in SEPARATORS for at in POSITIONS if (r := _read(stems, sep, at))]
    readings.sort(key=lambda r: (-r.digit_rests, len(r.counts)))
    return readings


def _recurring(stems: list[str], pattern: str) -> dict[str, int]:
    """The parts the pattern's "label" group takes in the stems that recur, with their counts."""
    compiled = re.compile(pattern)
    parts = Counter(found.group("label") for stem in stems if (found := compiled.match(stem)))
    return {part: n for part, n in parts.items() if n >= 2}


def _carries_labels(stems: list[str], pattern: str, labels: set[str]) -> bool:
    """Whether most stems split like `pattern` into parts that recur as labels would: train's
    labels, or several of their own (one shared prefix, `test_0001`, only says "test")."""
    recurring = _recurring(stems, pattern)
    return sum(recurring.values()) >= 0.5 * len(stems) > 0 and (len(recurring) >= 2 or bool(recurring.keys() & labels))


def _shared_share(stems: list[str], pattern: str) -> float:
    """The share of stems whose part where the label would be recurs: none where the test names
    lack the label's part (`..._Test0`), all where they share a scheme with train (a recording's day)."""
    return sum(_recurring(stems, pattern).values()) / max(1, len(stems))


def _test_candidates(folder: Path, by_dir: dict[Path, list[Path]], raw: Path, test_ids: set[str] | None) -> list[Path]:
    """The other folders that could hold the test files, best named first: the ones the sample's
    ids name, else the ones named like test, else all."""
    def named(d: Path) -> tuple[bool, bool]:
        names = {p.stem for p in by_dir[d]} | {p.name for p in by_dir[d]}
        covered = bool(test_ids) and len(test_ids & names) >= 0.9 * len(test_ids)
        return covered, "test" in d.relative_to(raw).as_posix().lower()

    marks = {d: named(d) for d in by_dir if d != folder}
    best = max(marks.values(), default=None)
    return [d for d, mark in marks.items() if mark == best]


def _test_fit(folder: Path, reading: _Reading, candidates: list[Path], by_dir: dict[Path, list[Path]],
              raw: Path) -> tuple[Path | None, float] | None:
    """The test folder for `folder` read by `reading` (among the candidates, one whose names do not
    split so, else the largest) and the share of its stems that share a part where the label would
    be; None where the reading does not hold against it."""
    def unlabelled(d: Path) -> bool:
        return not _carries_labels([p.stem for p in by_dir[d]], reading.pattern, set(reading.counts))

    if not candidates:
        # With neither the word "train" nor a test folder, nothing says which is which.
        return (None, 0.0) if "train" in folder.relative_to(raw).as_posix().lower() else None
    test_dir = max(candidates, key=lambda d: (unlabelled(d), len(by_dir[d])))
    if not unlabelled(test_dir):
        return None  # the test files are named the same way: a naming scheme, not labels
    return test_dir, _shared_share([p.stem for p in by_dir[test_dir]], reading.pattern)


def find_name_labels(images: list[Path], raw: Path, test_ids: set[str] | None = None) -> NameLabels | None:
    """The train folder whose file names carry their labels, with the test folder, or None."""
    by_dir: dict[Path, list[Path]] = {}
    for path in images:
        by_dir.setdefault(path.parent, []).append(path)
    found = []
    for folder, paths in by_dir.items():
        readings = _readings([p.stem for p in paths])
        if not readings:
            continue
        candidates = _test_candidates(folder, by_dir, raw, test_ids)
        held = [(reading, fit) for reading in readings
                if (fit := _test_fit(folder, reading, candidates, by_dir, raw)) is not None]
        if not held:
            continue
        # A reading whose part the test names lack (or never repeat) beats one whose part they
        # share among themselves: train and test recorded on different days split by day alike.
        reading, (test_dir, _) = min(held, key=lambda h: h[1][1])  # stable: ties keep `_readings`' order
        counts = dict(sorted(reading.counts.items()))
        found.append(NameLabels(folder, reading.pattern, reading.separator, counts, test_dir, reading.suffix))
    found.sort(key=lambda n: ("train" in n.train_dir.relative_to(raw).as_posix().lower(), sum(n.counts.values())), reverse=True)
    return found[0] if found else None
