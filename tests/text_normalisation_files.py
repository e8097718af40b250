"""A token normalisation competition made at any size, laid out as MLE-bench prepares Kaggle's
text normalization challenge: `en_train.csv` (sentence_id, token_id, class, before, after),
`en_test_2.csv` (sentence_id, token_id, before) and `en_sample_submission_2.csv` (id, after, the
input kept), each zipped as MLE-bench ships them, with `private/answers.csv` (id, after) and a
`competition.toml` so `agentk run` grades itself.

Tokens mix as the real data mixes them: ~74% plain words drawn from a Zipf vocabulary (kept as
written), ~19% punctuation (kept), and dates, letters, numbers, symbols, measures, ordinals,
decimals, money, digits, addresses on the web, telephone numbers, times and fractions spelled out
as spoken. Year-like numbers read as years after "in" and as counts elsewhere, so the word before
matters. Written as `python tests/text_normalisation_files.py ROOT --rows N` for measurements; the
baselines (the input kept, the training pairs memorised) go to `baselines.json` beside it.
"""

from __future__ import annotations

import argparse
import csv
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORD = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
        "twelve": "twelfth"}
_MONTHS = "January February March April May June July August September October November December".split()
_UNITS = {"km": "kilometers", "kg": "kilograms", "cm": "centimeters", "mm": "millimeters", "m": "meters",
          "mi": "miles", "ft": "feet", "%": "percent", "mph": "miles per hour", "lb": "pounds", "g": "grams",
          "MW": "megawatts", "kW": "kilowatts", "ha": "hectares", "sq mi": "square miles"}
_SYMBOLS = {"&": "and", "#": "number", "α": "alpha", "β": "beta", "μ": "mu", "π": "pi", "×": "times", "~": "tilde",
            "→": "→", "ª": "a", "_": "_", "ō": "o"}
_PUNCT = ([".", ",", '"', "'", "-", "(", ")", ":", ";", "?", "!", "/", "—"],
          [.37, .33, .07, .04, .04, .035, .035, .02, .015, .01, .01, .01, .015])
_CLASSES = ("PLAIN PUNCT DATE LETTERS CARDINAL VERBATIM MEASURE ORDINAL DECIMAL MONEY DIGIT ELECTRONIC TELEPHONE "
            "TIME FRACTION").split()
_SHARES = np.array([.7415, .1896, .026, .0154, .0135, .0079, .0015, .0013, .001, .0006, .0005, .0005, .0004,
                    .00015, .00012])
_SYLLABLES = ("ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si "
              "so su ta te ti to tu ver an en in on un ar er or st th ch sh tr pl gr str ing ed ly tion").split()
DESCRIPTION = """# Text Normalization Challenge - English Language

## Description
Convert written text into spoken forms: "12:47" becomes "twelve forty-seven" and "$3.16" becomes
"three dollars, sixteen cents". Each sentence is given token by token.

## Evaluation
Submissions are evaluated on prediction accuracy (the total percent of correct tokens). The predicted
and actual string must match exactly in order to count as correct.

## Submission File
For each token (id) in the test set, you must predict the normalized text. The id is the
sentence_id and token_id joined by an underscore:

    id,after
    0_0,"the"
    0_1,"quick"
    etc.

## Data
- en_train.csv - the training set, with the normalized text in `after` and the token's class
- en_test_2.csv - the test set; it holds sentence_id, token_id and before
- en_sample_submission_2.csv - a sample submission file in the correct format
"""
TOML = ('[competition]\nid = "{name}"\n[grading]\nmetric = "accuracy"\nhigher_is_better = true\n'
        'id_column = "id"\ntarget_columns = ["after"]\n')


def say(n: int) -> str:
    """English words for a whole number as the data writes them (no "and", no hyphens)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + say(n % 100))
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand")):
        if n >= size:
            return say(n // size) + " " + name + ("" if n % size == 0 else " " + say(n % size))
    raise AssertionError(n)


def say_ordinal(n: int) -> str:
    words = say(n).split()
    last = words[-1]
    words[-1] = _ORD.get(last, last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return " ".join(words)


def say_year(n: int) -> str:
    if 2000 <= n < 2010 or n % 1000 == 0:
        return say(n)
    if n % 100 == 0:
        return say(n // 100) + " hundred"
    return say(n // 100) + " " + (say(n % 100) if n % 100 >= 10 else "oh " + say(n % 100))


def _suffix(n: int) -> str:
    return "th" if 10 <= n % 100 < 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _spell(text: str) -> str:
    return " ".join(_ONES[int(c)] if c.isdigit() else c.lower() for c in text if c.isalnum())


def _number(rng: np.random.Generator) -> int:
    """Counts as text has them: small ones common, a long tail of large ones."""
    return int(min(10 ** rng.uniform(0, 6.5), 2_000_000_000)) if rng.random() < .6 else int(rng.integers(1, 60))


def _vocabulary(rng: np.random.Generator, size: int) -> np.ndarray:
    parts = np.array(_SYLLABLES)
    lengths = rng.integers(1, 5, size)
    words = ["".join(parts[rng.integers(0, len(parts), k)]) for k in lengths]
    # Common function words lead the Zipf ranks; a tenth of the rest are names (capitalised).
    head = "the , of and in to a was is for on as by with he at from his that it an were are which".split()
    words = [w for w in head if w != ","] + [w.capitalize() if rng.random() < .1 else w for w in words]
    return np.array(list(dict.fromkeys(words)), dtype=object)


def _token(kind: str, rng: np.random.Generator, acronyms: np.ndarray, acronym_p: np.ndarray) -> tuple[str, str]:
    """(before, after) of one token of a class other than PLAIN and PUNCT."""
    if kind == "DATE":
        year = int(rng.integers(1500, 2021)) if rng.random() < .3 else int(rng.integers(1900, 2021))
        month, day, form = int(rng.integers(12)), int(rng.integers(1, 29)), rng.random()
        if form < .55:
            return str(year), say_year(year)
        if form < .75:
            return (f"{_MONTHS[month]} {day}, {year}",
                    f"{_MONTHS[month].lower()} {say_ordinal(day)} {say_year(year)}")
        if form < .9:
            return f"{day} {_MONTHS[month]} {year}", f"the {say_ordinal(day)} of {_MONTHS[month].lower()} {say_year(year)}"
        decade = year // 10 * 10
        spoken = say_year(decade)
        return f"{decade}s", spoken[:-1] + "ies" if spoken.endswith("y") else spoken + "s"
    if kind == "LETTERS":
        word = str(rng.choice(acronyms, p=acronym_p))
        return word, " ".join(c.lower() for c in word if c.isalpha())
    if kind == "CARDINAL":
        n = _number(rng)
        written = f"{n:,}" if n >= 10000 and rng.random() < .7 else str(n)
        return written, say(n)
    if kind == "VERBATIM":
        mark = str(rng.choice(list(_SYMBOLS)))
        return mark, _SYMBOLS[mark]
    if kind == "MEASURE":
        n, unit = _number(rng) % 1000 or 1, str(rng.choice(list(_UNITS)))
        gap = " " if rng.random() < .5 or " " in unit else ""
        return f"{n}{gap}{unit}", f"{say(n)} {_UNITS[unit]}"
    if kind == "ORDINAL":
        n = int(rng.integers(1, 120))
        return f"{n}{_suffix(n)}", say_ordinal(n)
    if kind == "DECIMAL":
        whole, frac = int(rng.integers(0, 100)), str(int(rng.integers(1, 1000)))
        return f"{whole}.{frac}", f"{say(whole)} point " + " ".join("o" if d == "0" else _ONES[int(d)] for d in frac)
    if kind == "MONEY":
        n = int(rng.integers(1, 5000))
        return f"${n}", f"{say(n)} dollar" + ("" if n == 1 else "s")
    if kind == "DIGIT":
        digits = "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(2, 5))))
        return digits, " ".join("o" if d == "0" else _ONES[int(d)] for d in digits)
    if kind == "ELECTRONIC":
        name = "".join(rng.choice(list("abcdefghiklmnoprstuvw"), int(rng.integers(3, 9))))
        return f"www.{name}.com", "w w w dot " + " ".join(name) + " dot c o m"
    if kind == "TELEPHONE":
        head, tail = rng.integers(100, 1000), rng.integers(1000, 10000)
        return f"{head}-{tail}", f"{_spell(str(head))} sil {_spell(str(tail))}"
    if kind == "TIME":
        hour, minute = int(rng.integers(1, 13)), int(rng.integers(10, 60))
        return f"{hour}:{minute}", f"{say(hour)} {say(minute)}"
    top, bottom = int(rng.integers(1, 4)), int(rng.choice([2, 3, 4]))
    names = {2: ("half", "halves"), 3: ("third", "thirds"), 4: ("quarter", "quarters")}[bottom]
    return f"{top}/{bottom}", f"{say(top)} {names[0] if top == 1 else names[1]}"


def make_tokens(n_rows: int, seed: int = 0) -> pd.DataFrame:
    """About `n_rows` tokens in sentences: sentence_id, token_id, class, before, after."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.poisson(13.4, int(n_rows / 13.4) + 1), 2, 80)
    n = int(lengths.sum())
    kinds = rng.choice(len(_CLASSES), n, p=_SHARES / _SHARES.sum())
    words = _vocabulary(rng, max(2000, int(40 * n ** 0.5)))
    ranks = np.arange(1, len(words) + 1, dtype=float)
    p = 1 / (ranks + 2.7) ** 1.05
    before = words[rng.choice(len(words), n, p=p / p.sum())]
    after = before.copy()
    punct = kinds == _CLASSES.index("PUNCT")
    marks = np.array(_PUNCT[0], dtype=object)[rng.choice(len(_PUNCT[0]), int(punct.sum()), p=_PUNCT[1])]
    before[punct], after[punct] = marks, marks
    acronyms = np.array(list(dict.fromkeys("".join(rng.choice(list("ABCDEFGHIJKLMNOPRSTUVW"), k))
                                           for k in rng.integers(2, 5, 3000))), dtype=object)
    acronym_p = 1 / np.arange(1, len(acronyms) + 1) ** 1.1
    acronym_p /= acronym_p.sum()
    for i in np.flatnonzero(kinds > 1):
        before[i], after[i] = _token(_CLASSES[kinds[i]], rng, acronyms, acronym_p)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    sentence = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(n) - np.repeat(starts, lengths)
    # Years read as years after "in", as counts after "about": the word before decides.
    year_like = np.array([len(b) == 4 and b.isdigit() for b in before]) & (position > 0)
    for i in np.flatnonzero(year_like):
        if kinds[i] == _CLASSES.index("DATE"):
            word = "in" if rng.random() < .7 else None
        else:
            word = "about" if kinds[i] == _CLASSES.index("CARDINAL") else None
        if word is not None:
            before[i - 1], after[i - 1], kinds[i - 1] = word, word, 0
    ends = np.cumsum(lengths) - 1
    before[ends], after[ends], kinds[ends] = ".", ".", _CLASSES.index("PUNCT")
    return pd.DataFrame({"sentence_id": sentence, "token_id": position,
                         "class": np.array(_CLASSES, dtype=object)[kinds], "before": before, "after": after})


def _renumbered(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["sentence_id"] = pd.factorize(out["sentence_id"])[0]
    return out


def _write(frame: pd.DataFrame, path: Path, zipped: bool) -> None:
    frame.to_csv(path, index=False, quotechar='"', quoting=csv.QUOTE_NONNUMERIC)
    if zipped:
        with zipfile.ZipFile(path.with_name(path.name + ".zip"), "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(path, arcname=path.name)
        path.unlink()


def baselines(train: pd.DataFrame, answers: pd.DataFrame, test: pd.DataFrame) -> dict[str, float]:
    """The input kept, and each token's most frequent rewriting in training (else the input)."""
    kept = float((test["before"].to_numpy() == answers["after"].to_numpy()).mean())
    counts = train.groupby(["before", "after"], sort=False).size().reset_index(name="n")
    best = counts.sort_values("n", ascending=False).drop_duplicates("before").set_index("before")["after"]
    memorised = test["before"].map(best).fillna(test["before"])
    return {"keep_input": kept, "memorised": float((memorised.to_numpy() == answers["after"].to_numpy()).mean())}


def normalisation_files(root: Path, n_rows: int, seed: int = 0, zipped: bool = True) -> tuple[Path, dict]:
    """The competition folder (about `n_rows` tokens, a tenth of the sentences held out as the test)
    and its baselines."""
    tokens = make_tokens(n_rows, seed)
    rng = np.random.default_rng(seed + 1)
    sentences = tokens["sentence_id"].unique()
    held = np.isin(tokens["sentence_id"], rng.choice(sentences, len(sentences) // 10, replace=False))
    train, answers = _renumbered(tokens[~held]), _renumbered(tokens[held])
    test = answers[["sentence_id", "token_id", "before"]]
    ids = answers["sentence_id"].astype(str) + "_" + answers["token_id"].astype(str)
    data, private = root / "data", root / "private"
    data.mkdir(parents=True, exist_ok=True)
    private.mkdir(exist_ok=True)
    (root / "description.md").write_text(DESCRIPTION)
    (root / "competition.toml").write_text(TOML.format(name=root.name))
    _write(train, data / "en_train.csv", zipped)
    _write(test, data / "en_test_2.csv", zipped)
    _write(pd.DataFrame({"id": ids, "after": answers["before"]}), data / "en_sample_submission_2.csv", zipped)
    _write(pd.DataFrame({"id": ids, "after": answers["after"]}), private / "answers.csv", False)
    scores = {"train_rows": len(train), "test_rows": len(test), **baselines(train, answers, test)}
    (root / "baselines.json").write_text(json.dumps(scores, indent=2))
    return root, scores


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unzipped", action="store_true")
    args = parser.parse_args()
    print(json.dumps(normalisation_files(args.root, args.rows, args.seed, not args.unzipped)[1], indent=2))
