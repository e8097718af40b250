"""Text competitions of three kinds, each made here, tiny and real, and run end to end: labels that
read like missing values ("None", "NA"), several binary labels per text (one probability column
each, mean column AUC), and text to text (token normalisation)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.grading import grade_file
from agentk.sources import load_competition

pytestmark = pytest.mark.integration

AGENTK = [sys.executable, "-m", "agentk.cli"]

# Words that pandas reads as missing by default; as labels they are words like any other.
NA_WORDS = ("None", "NA", "null", "nan", "N/A")
TOPIC_WORDS = {"None": ("calm", "quiet", "still", "idle"), "NA": ("storm", "flood", "gale", "hail"),
               "null": ("smoke", "fire", "ash", "ember"), "fine": ("picnic", "sunny", "breeze", "meadow")}


def run(source: Path, tmp_path: Path, budget: int = 10) -> dict:
    proc = subprocess.run([*AGENTK, "run", str(source), "-w", str(tmp_path / "ws"), "--time-budget", str(budget),
                           "--folds", "2", "--no-tune"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "ws" / source.name / "result.json").read_text())
    assert result["valid_submission"] and result["error"] is None, result
    return result


def write_competition(root: Path, page: str, toml: str, files: dict[str, pd.DataFrame]) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "description.md").write_text(page)
    (root / "competition.toml").write_text(toml)
    for name, frame in files.items():
        path = root / name if "/" in name else root / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
    return root


def topic_texts(rng: np.random.Generator, labels: list[str]) -> list[str]:
    filler = ("the", "a", "today", "was", "very", "and")
    return [" ".join(rng.choice(TOPIC_WORDS[y] + filler, 7)) for y in labels]


def na_label_competition(root: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(0)
    labels = list(rng.choice(list(TOPIC_WORDS), 240))
    frame = pd.DataFrame({"id": [f"t{i:03d}" for i in range(240)], "text": topic_texts(rng, labels), "weather": labels})
    train, test = frame.iloc[:180], frame.iloc[180:]
    page = ("# Weather words\n\nLabel each note with its weather: None, NA, null or fine.\n\n"
            "## Evaluation\n\nSubmissions are evaluated on accuracy.\n")
    toml = ('[competition]\nid = "na-words"\n[grading]\nmetric = "accuracy"\nhigher_is_better = true\n'
            'id_column = "id"\ntarget_columns = ["weather"]\n')
    source = write_competition(root, page, toml, {
        "train.csv": train, "test.csv": test[["id", "text"]],
        "sample_submission.csv": pd.DataFrame({"id": test["id"], "weather": "fine"}),
        "private/answers.csv": test[["id", "weather"]]})
    return source, test


def test_labels_that_read_like_missing_values_are_words(tmp_path: Path) -> None:
    source, test = na_label_competition(tmp_path / "na-words")
    perfect = tmp_path / "perfect.csv"
    test[["id", "weather"]].to_csv(perfect, index=False)
    report = grade_file(perfect, load_competition(source))
    assert report.valid and report.score == 1.0, report

    result = run(source, tmp_path)
    submission = pd.read_csv(tmp_path / "ws" / "na-words" / "submissions" / "submission.csv",
                             dtype=str, keep_default_na=False)
    assert set(submission["weather"]) <= set(TOPIC_WORDS) and {"None", "NA"} <= set(submission["weather"])
    constant = (test["weather"] == "fine").mean()
    assert result["test_score"] > constant + 0.3, (result["test_score"], constant)
    assert "labels 'NA', 'None', 'null' are words" in " ".join(plan_notes(tmp_path, "na-words"))


def plan_notes(tmp_path: Path, name: str) -> list[str]:
    return json.loads((tmp_path / "ws" / name / "setup" / "plan.json").read_text())["facts"]["notes"]


LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
CUES = {"toxic": "awful", "severe_toxic": "vile", "obscene": "filthy", "threat": "hurt", "insult": "idiot",
        "identity_hate": "hateful"}
PLAIN = ("the", "article", "edit", "page", "thanks", "source", "please", "talk", "wiki", "fixed", "section")


def multilabel_competition(root: Path, n: int = 400) -> tuple[Path, pd.DataFrame]:
    """Comments with six binary labels, each marked by its own cue word (rare labels rarer)."""
    rng = np.random.default_rng(2)
    rates = (0.3, 0.08, 0.15, 0.06, 0.15, 0.08)
    flags = np.column_stack([rng.random(n) < r for r in rates]).astype(int)
    texts = []
    for row in flags:
        words = list(rng.choice(PLAIN, 8))
        words += [CUES[label] for label, on in zip(LABELS, row) if on and rng.random() < 0.85]
        rng.shuffle(words)
        texts.append(" ".join(words))
    frame = pd.DataFrame({"id": [f"{i:016x}" for i in rng.integers(0, 2**62, n)], "comment_text": texts})
    frame[list(LABELS)] = flags
    train, test = frame.iloc[: n * 3 // 4], frame.iloc[n * 3 // 4:]
    page = ("# Comment classification\n\nPredict a probability for each of the six kinds of comment.\n\n"
            "## Evaluation\n\nSubmissions are evaluated on the mean column-wise ROC AUC: the average of the "
            "individual AUCs of each predicted column.\n")
    toml = ('[competition]\nid = "six-labels"\n[grading]\nmetric = "auc"\nhigher_is_better = true\n'
            f'id_column = "id"\ntarget_columns = {json.dumps(list(LABELS))}\n')
    sample = pd.DataFrame({"id": test["id"], **{label: 0.5 for label in LABELS}})
    source = write_competition(root, page, toml, {
        "train.csv": train, "test.csv": test[["id", "comment_text"]], "sample_submission.csv": sample,
        "private/answers.csv": test[["id", *LABELS]]})
    return source, test


def test_several_binary_labels_per_text(tmp_path: Path) -> None:
    source, test = multilabel_competition(tmp_path / "six-labels")
    result = run(source, tmp_path, budget=15)
    submission = pd.read_csv(tmp_path / "ws" / "six-labels" / "submissions" / "submission.csv")
    assert list(submission.columns) == ["id", *LABELS]
    # A constant scores 0.5 on every column; the cue words make each label learnable.
    assert result["test_score"] > 0.8, result["test_score"]
    solve = json.loads((tmp_path / "ws" / "six-labels" / "solve" / "solve_result.json").read_text())
    assert set(solve["models_per_target"]) == set(LABELS)
    assert any(n.startswith("several labels per row: 6 binary targets") for n in plan_notes(tmp_path, "six-labels"))


# ---- text to text: token normalisation ----------------------------------------------------------------

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
       "seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
MONTHS = "January February March April May June July August September October November December".split()
ORDINAL = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
           "twelve": "twelfth"}
UNITS = {"kg": "kilograms", "km": "kilometers", "cm": "centimeters", "mg": "milligrams", "%": "percent"}
WORDS = ("the", "city", "was", "founded", "in", "river", "north", "of", "a", "population", "with", "is", "and",
         "station", "opened", "school", "by", "road", "its", "team", "won", "league", "old", "church", "built")


def say(n: int) -> str:
    """English words for 0 <= n < 10000, as the text normalisation data writes them (no "and")."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        return ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + say(n % 100))
    return say(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + say(n % 1000))


def say_ordinal(n: int) -> str:
    words = say(n).split()
    last = words[-1]
    words[-1] = ORDINAL.get(last, last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return " ".join(words)


def say_year(n: int) -> str:
    if 2000 <= n < 2010:
        return say(n)
    return say(n // 100) + " " + (say(n % 100) if n % 100 >= 10 else "oh " + say(n % 100))


def token(rng: np.random.Generator) -> tuple[str, str, str]:
    """(class, before, after) drawn as the text normalisation data mixes them: mostly plain words."""
    kind = rng.choice(["PLAIN", "PUNCT", "CARDINAL", "DATE", "MEASURE", "LETTERS"], p=[.62, .14, .09, .06, .05, .04])
    if kind == "PLAIN":
        word = str(rng.choice(WORDS))
        return kind, word, word
    if kind == "PUNCT":
        mark = str(rng.choice([",", ".", "(", ")", ":"]))
        return kind, mark, mark
    if kind == "CARDINAL":
        n = int(rng.integers(0, 3000))
        return kind, str(n), say(n)
    if kind == "DATE":
        month, day, year = int(rng.integers(12)), int(rng.integers(1, 29)), int(rng.integers(1890, 2021))
        if rng.random() < 0.5:
            return kind, str(year), say_year(year)
        return kind, f"{MONTHS[month]} {day}, {year}", f"{MONTHS[month].lower()} {say_ordinal(day)} {say_year(year)}"
    if kind == "MEASURE":
        n, unit = int(rng.integers(2, 500)), str(rng.choice(list(UNITS)))
        return kind, f"{n}{unit}", f"{say(n)} {UNITS[unit]}"
    letters = "".join(rng.choice(list("ABCDEFGHIKLMNPRSTUVW"), int(rng.integers(2, 5))))
    return kind, letters, " ".join(letters.lower())


def normalisation_competition(root: Path, n_train: int = 500, n_test: int = 120) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(3)
    rows = []
    for sentence in range(n_train + n_test):
        for position in range(int(rng.integers(6, 13))):
            kind, before, after = token(rng)
            rows.append((sentence, position, kind, before, after))
    frame = pd.DataFrame(rows, columns=["sentence_id", "token_id", "class", "before", "after"])
    train, test = frame[frame["sentence_id"] < n_train], frame[frame["sentence_id"] >= n_train].copy()
    test["id"] = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
    page = ("# Text normalization\n\nConvert written text into its spoken form: each token of a sentence, as "
            "written (before), becomes what a reader says (after).\n\n## Evaluation\n\nSubmissions are evaluated "
            "on prediction accuracy (the total percent of correct tokens).\n\n## Data\n\nEach token has an id "
            "made of its sentence_id and token_id joined by an underscore.\n")
    toml = ('[competition]\nid = "token-normalisation"\n[grading]\nmetric = "accuracy"\nhigher_is_better = true\n'
            'id_column = "id"\ntarget_columns = ["after"]\n')
    source = write_competition(root, page, toml, {
        "en_train.csv": train, "en_test.csv": test[["sentence_id", "token_id", "before"]],
        "en_sample_submission.csv": pd.DataFrame({"id": test["id"], "after": test["before"]}),
        "private/answers.csv": test[["id", "after"]]})
    return source, test


def test_tokens_rewritten_as_spoken(tmp_path: Path) -> None:
    source, test = normalisation_competition(tmp_path / "token-normalisation")
    result = run(source, tmp_path, budget=15)
    # The constant a grader must beat: every token kept as written (the sample itself).
    kept = float((test["before"] == test["after"]).mean())
    assert result["test_score"] > kept + 0.1, (result["test_score"], kept)
    notes = plan_notes(tmp_path, "token-normalisation")
    assert any(n.startswith("text to text") and "'before'" in n for n in notes), notes
    assert any(n.startswith("composed key: 'id' is 'sentence_id' and 'token_id'") for n in notes), notes
