"""Spelling rules for tokens never seen in training: numbers, years, dates, measures, letters.

Each rule reads one shape of token ("2015", "March 3, 2015", "5kg", "BBC") and says it in words.
A rule is trusted only as far as the training pairs bear it out: for each shape, the rule whose
spelling matches the training answers most often is used, and only where it beats keeping the
token as written there. Units ("kg" -> "kilograms") are learnt from the training pairs too.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from solve_pipeline.text_to_text import spelling

_MONTHS = ("january february march april may june july august september october november december").split()
_MONTH = "(" + "|".join(m.capitalize() for m in _MONTHS) + "|" + "|".join(m[:3].capitalize() for m in _MONTHS) + r")\.?"
_INT = re.compile(r"^-?\d{1,15}$")
_GROUPED = re.compile(r"^\d{1,3}(,\d{3})+$")
_YEAR = re.compile(r"^(1[0-9]|20)\d\d$")
_DECIMAL = re.compile(r"^\d*\.\d+$")
_MDY = re.compile(rf"^{_MONTH}\s+(\d{{1,2}}),?\s+(\d{{4}})$")
_DMY = re.compile(rf"^(\d{{1,2}})\s+{_MONTH}\s+(\d{{4}})$")
_MEASURE = re.compile(r"^(\d+(?:\.\d+)?)\s?([A-Za-z%°µ]+[23]?)$")
_LETTERS = re.compile(r"^(?:[A-Z]{2,6}|(?:[A-Za-z]\.){2,6})$")
MAY_HAVE_SHAPE = re.compile(r"[0-9A-Z]")  # every shape holds a digit or a capital
_MIN_SEEN = 3  # training tokens of a shape before a rule for it is trusted
# Readings are kept per distinct token: a year or a name recurs thousands of times in millions of
# training pairs, and each reading is a few regular expressions.
_cached = functools.lru_cache(maxsize=1 << 18)


def _month(name: str) -> str:
    key = name.rstrip(".").lower()[:3]
    return next(m for m in _MONTHS if m.startswith(key))


@_cached
def _number(text: str) -> str | None:
    if _INT.match(text):
        return spelling.cardinal(int(text))
    if _GROUPED.match(text):
        return spelling.cardinal(int(text.replace(",", "")))
    return spelling.decimal(text) if _DECIMAL.match(text) else None


@_cached
def _year(text: str) -> str | None:
    return spelling.year(int(text)) if _YEAR.match(text) else None


@_cached
def _date_mdy(text: str) -> str | None:
    found = _MDY.match(text)
    if not found or not 1 <= int(found.group(2)) <= 31:
        return None
    return f"{_month(found.group(1))} {spelling.ordinal(int(found.group(2)))} {spelling.year(int(found.group(3)))}"


@_cached
def _date_dmy(text: str) -> str | None:
    found = _DMY.match(text)
    if not found or not 1 <= int(found.group(1)) <= 31:
        return None
    return f"the {spelling.ordinal(int(found.group(1)))} of {_month(found.group(2))} {spelling.year(int(found.group(3)))}"


@_cached
def _letters(text: str) -> str | None:
    return " ".join(c.lower() for c in text if c.isalpha()) if _LETTERS.match(text) else None


# (name, shape, speller): a shape groups the tokens rules compete on.
# A year-like number ("1921") is a shape of its own: said as a year or as a count, whichever the
# training pairs of that shape say more often.
_SHAPES: dict[str, re.Pattern[str]] = {"year": _YEAR, "number": re.compile(r"^-?[\d,]*\.?\d+$"),
                                       "date": re.compile(rf"{_MONTH}"), "measure": _MEASURE, "letters": _LETTERS}
_RULES: list[tuple[str, str, Callable[[str], str | None]]] = [
    ("year", "year", _year), ("cardinal", "year", _number), ("cardinal", "number", _number),
    ("date_mdy", "date", _date_mdy), ("date_dmy", "date", _date_dmy), ("letters", "letters", _letters),
]


@_cached
def shape_of(text: str) -> str | None:
    """The first shape a token has ("number" before "measure": "2015" is a number)."""
    if not MAY_HAVE_SHAPE.search(text):
        return None  # most tokens are lower-case words and marks: one scan settles them
    for shape, pattern in _SHAPES.items():
        if pattern.search(text) if shape == "date" else pattern.match(text):
            return shape
    return None


@dataclass
class Rules:
    """The rules the training pairs bear out, per shape (best first), and the units learnt."""

    chosen: dict[str, list[str]] = field(default_factory=dict)
    # Where two rules read a shape, the word before may decide ("in 1921" is a year): (shape,
    # previous token) -> the rule right most often after it in training.
    after_word: dict[tuple[str, str], str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # "kg" -> "kilograms"
    report: dict[str, dict[str, float]] = field(default_factory=dict)  # shape -> rule -> training accuracy

    def say(self, text: str, previous: str = "") -> str | None:
        """The token in words, or None where no trusted rule reads it."""
        shape = shape_of(text) or ""
        names = self.chosen.get(shape, [])
        first = self.after_word.get((shape, previous.lower()))
        for name in ([first] if first else []) + names:
            if name == "measure":
                said = self._measure(text)
            else:
                said = next(f for n, _, f in _RULES if n == name)(text)  # a name spells alike in every shape
            if said is not None:
                return said
        return None

    def _measure(self, text: str) -> str | None:
        found = _MEASURE.match(text)
        if not found or found.group(2) not in self.units:
            return None
        number = _number(found.group(1))
        return None if number is None else f"{number} {self.units[found.group(2)]}"

    def to_json(self) -> dict:
        return {"chosen": self.chosen, "units": dict(sorted(self.units.items())[:30]), "training_accuracy": self.report,
                "decided_by_the_word_before": len(self.after_word)}


def _learn_units(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Each unit's spoken name: what follows the spelled number in the training answers."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for before, after in pairs:
        found = _MEASURE.match(before)
        number = _number(found.group(1)) if found else None
        if number is not None and after.startswith(number + " "):
            seen[found.group(2)][after[len(number) + 1:]] += 1  # type: ignore[union-attr]
    return {unit: names.most_common(1)[0][0] for unit, names in seen.items()}


def _learn_after_word(rules: Rules, previous: list[str], pairs: list[tuple[str, str]]) -> None:
    """For shapes two rules read, the rule the word before picks, where it picks one clearly."""
    right: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for word, (before, after) in zip(previous, pairs):
        shape = shape_of(before) or ""
        if len(rules.chosen.get(shape, [])) < 2:
            continue
        for name in rules.chosen[shape]:
            if next(f for n, _, f in _RULES if n == name)(before) == after:
                right[(shape, word.lower())][name] += 1
    for key, counts in right.items():
        (name, hits), total = counts.most_common(1)[0], sum(counts.values())
        if hits >= _MIN_SEEN and hits >= 0.8 * total and name != rules.chosen[key[0]][0]:
            rules.after_word[key] = name


def fit_rules(pairs: list[tuple[str, str]], previous: list[str] | None = None) -> Rules:
    """The rules that beat keeping the token, per shape, on the training pairs (before, after);
    `previous`: each pair's token before, for the shapes two rules read."""
    rules = Rules(units=_learn_units(pairs))
    by_shape: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for before, after in pairs:
        shape = shape_of(before)
        if shape is not None:
            by_shape[shape].append((before, after))
    for shape, seen in by_shape.items():
        if len(seen) < _MIN_SEEN:
            continue
        keep = sum(b == a for b, a in seen) / len(seen)
        scores = {"keep": keep}
        candidates = [(n, f) for n, s, f in _RULES if s == shape]
        if shape == "measure":
            candidates = [("measure", rules._measure)]
        for name, speller in candidates:
            said = [(speller(b), a) for b, a in seen]
            read = [(s, a) for s, a in said if s is not None]
            if len(read) >= _MIN_SEEN:
                # Right where it reads the token; where it cannot, the token is kept (or memorised).
                scores[name] = sum(s == a for s, a in read) / len(read)
        rules.report[shape] = {k: round(v, 4) for k, v in scores.items()}
        better = sorted((n for n in scores if n != "keep" and scores[n] > keep), key=lambda n: -scores[n])
        if better:
            rules.chosen[shape] = better
    if previous is not None:
        _learn_after_word(rules, previous, pairs)
    return rules
