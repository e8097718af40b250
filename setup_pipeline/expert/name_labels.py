"""Train images whose labels are in their file names (`cat.0.jpg`, `dog_17.png`, `golden_retriever-3.jpg`),
beside test images whose names carry no label (`1.jpg`): the label is the part of the stem before a
separator, recognised by structure alone.

A reading of a folder is a separator (`.`, `_` or `-`) and whether the label ends at its first or its
last occurrence. It holds when nearly every stem splits so, into 2..200 labels that each recur (an id
is not a label: `img_0001` everywhere gives one "label", `a3f9_1` gives one per image), and the test
folder's names do not split into recurring prefixes the same way (a naming scheme shared by train and
test, `IMG_0001`, is not a label either).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SEPARATORS = (".", "_", "-")
MAX_LABELS = 200
MIN_PER_LABEL = 2  # every label recurs ...
MIN_MEAN_PER_LABEL = 5  # ... and holds several images on average
MAX_UNLABELLED = 0.01  # stray files whose names do not split (a README image, a thumbnail)


@dataclass(frozen=True)
class NameLabels:
    """A folder of train images labelled by their names, and the folder of test images."""

    train_dir: Path
    pattern: str  # matched against a file stem; its group "label" is the label
    separator: str
    counts: dict[str, int]  # label -> images, labels sorted
    test_dir: Path | None

    def label_of(self, stem: str) -> str | None:
        found = re.match(self.pattern, stem)
        return found.group("label") if found else None

    def describe(self, raw: Path) -> str:
        shown = ", ".join(f"{label} {n:,}" for label, n in list(self.counts.items())[:12])
        more = f", ... ({len(self.counts)} labels)" if len(self.counts) > 12 else ""
        return (f"labels are the file-name prefixes before {self.separator!r} under "
                f"{self.train_dir.relative_to(raw).as_posix()}/: {shown}{more}")


def label_pattern(separator: str, last: bool) -> str:
    """The stem's label ends at the separator's first occurrence, or at its last (multi-word
    labels such as `golden_retriever_12`)."""
    sep = re.escape(separator)
    return rf"^(?P<label>.+){sep}[^{sep}]+$" if last else rf"^(?P<label>[^{sep}]+){sep}.+$"


@dataclass(frozen=True)
class _Reading:
    pattern: str
    separator: str
    counts: Counter
    digit_rests: float  # share of stems whose part after the label is a number, as ids are


def _read(stems: list[str], separator: str, last: bool) -> _Reading | None:
    pattern = label_pattern(separator, last)
    compiled = re.compile(pattern)
    labels, digit_rests = [], 0
    for stem in stems:
        found = compiled.match(stem)
        if found:
            labels.append(found.group("label"))
            digit_rests += stem[found.end("label") + 1:].isdigit()
    counts = Counter(labels)
    if len(stems) - len(labels) > MAX_UNLABELLED * len(stems) or not 2 <= len(counts) <= MAX_LABELS:
        return None
    if min(counts.values()) < MIN_PER_LABEL or len(labels) < MIN_MEAN_PER_LABEL * len(counts):
        return None
    return _Reading(pattern, separator, counts, digit_rests / len(labels))


def _best_reading(stems: list[str]) -> _Reading | None:
    readings = [r for sep in SEPARATORS for last in (False, True) if (r := _read(stems, sep, last))]
    # The rest after a label is most often a number; between two readings that both hold, the
    # one leaving the number alone keeps a multi-word label whole; then the fewer labels.
    readings.sort(key=lambda r: (-r.digit_rests, len(r.counts)))
    return readings[0] if readings else None


def _carries_prefixes(stems: list[str], pattern: str, labels: set[str]) -> bool:
    """Whether most stems split like `pattern` into prefixes that recur as labels would: train's
    labels, or several of their own (one shared prefix, `test_0001`, only says "test")."""
    compiled = re.compile(pattern)
    prefixes = Counter(found.group("label") for stem in stems if (found := compiled.match(stem)))
    recurring = {prefix: n for prefix, n in prefixes.items() if n >= 2}
    return sum(recurring.values()) >= 0.5 * len(stems) > 0 and (len(recurring) >= 2 or bool(recurring.keys() & labels))


def find_name_labels(images: list[Path], raw: Path, test_ids: set[str] | None = None) -> NameLabels | None:
    """The train folder whose image names carry their labels, with the test folder (the one the
    sample's ids name, else one named like test, else the largest), or None."""
    by_dir: dict[Path, list[Path]] = {}
    for path in images:
        by_dir.setdefault(path.parent, []).append(path)
    found = []
    for folder, paths in by_dir.items():
        reading = _best_reading([p.stem for p in paths])
        if reading is None:
            continue
        others = {d: [p.stem for p in ps] for d, ps in by_dir.items() if d != folder}
        unlabelled = {d for d, stems in others.items() if not _carries_prefixes(stems, reading.pattern, set(reading.counts))}

        def rank(d: Path) -> tuple:
            names = {p.stem for p in by_dir[d]} | {p.name for p in by_dir[d]}
            covered = bool(test_ids) and len(test_ids & names) >= 0.9 * len(test_ids)
            return covered, "test" in d.relative_to(raw).as_posix().lower(), d in unlabelled, len(by_dir[d])
        test_dir = max(others, key=rank) if others else None
        if test_dir is not None and test_dir not in unlabelled:
            continue  # the test images are named the same way: a naming scheme, not labels
        if test_dir is None and "train" not in folder.relative_to(raw).as_posix().lower():
            continue  # with neither the word "train" nor a test folder, nothing says which is which
        counts = dict(sorted(reading.counts.items()))
        found.append(NameLabels(folder, reading.pattern, reading.separator, counts, test_dir))
    found.sort(key=lambda n: ("train" in n.train_dir.relative_to(raw).as_posix().lower(), sum(n.counts.values())), reverse=True)
    return found[0] if found else None
