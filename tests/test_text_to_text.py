"""Text to text in parts: numbers said as text normalisation says them, the rules the training
pairs bear out (and only those), memorised pairs in context, and a key made of two columns found
by content."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from setup_pipeline.perception.composed_keys import find_composed_keys
from setup_pipeline.perception.tables import Logical
from solve_pipeline.text_to_text import spelling
from solve_pipeline.text_to_text.memory import memorise
from solve_pipeline.text_to_text.rules import fit_rules
from text_normalisation_files import normalisation_files


def test_numbers_years_and_ordinals_in_words() -> None:
    assert spelling.cardinal(2607) == "two thousand six hundred seven"
    assert spelling.cardinal(-40) == "minus forty"
    assert spelling.cardinal(3_000_012) == "three million twelve"
    assert [spelling.ordinal(n) for n in (1, 12, 20, 23)] == ["first", "twelfth", "twentieth", "twenty third"]
    assert [spelling.year(y) for y in (1921, 1905, 1900, 2005, 2015)] == [
        "nineteen twenty one", "nineteen oh five", "nineteen hundred", "two thousand five", "twenty fifteen"]
    assert spelling.decimal("3.05") == "three point zero five" and spelling.decimal("3.x") is None


def test_rules_are_trusted_only_where_the_training_pairs_bear_them_out() -> None:
    pairs = [("12", "twelve"), ("7", "seven"), ("300", "three hundred"), ("5kg", "five kilograms"),
             ("9kg", "nine kilograms"), ("2km", "two kilometers"), ("ABC", "a b c"), ("NBC", "n b c"),
             ("CIA", "c i a"), ("March 3, 2015", "march third twenty fifteen"),
             ("May 1, 1999", "may first nineteen ninety nine"), ("June 9, 2001", "june ninth two thousand one")]
    rules = fit_rules(pairs)
    assert rules.units == {"kg": "kilograms", "km": "kilometers"}
    assert rules.say("41") == "forty one" and rules.say("12km") == "twelve kilometers"
    assert rules.say("BBC") == "b b c" and rules.say("July 4, 1776") == "july fourth seventeen seventy six"
    assert rules.say("3mg") is None  # a unit never seen in training is not guessed
    # Where the answers keep a shape as written (upper-case words here), no rule speaks for it.
    kept = fit_rules([("NASA", "NASA"), ("UEFA", "UEFA"), ("FIFA", "FIFA"), ("NATO", "NATO")])
    assert "letters" not in kept.chosen and kept.say("UNESCO") is None


def test_the_word_before_decides_between_two_readings() -> None:
    pairs = ([("1921", "nineteen twenty one")] * 5 + [("1500", "one thousand five hundred")] * 8
             + [("1700", "seventeen hundred")] * 4)
    previous = ["in"] * 5 + ["about"] * 8 + ["in"] * 4
    rules = fit_rules(pairs, previous)
    assert rules.say("1984", "in") == "nineteen eighty four"
    assert rules.say("1984", "about") == "one thousand nine hundred eighty four"


def test_memorised_pairs_use_the_token_before_where_it_decides() -> None:
    previous = ["in", "in", "the", "the", "", "a"]
    tokens = ["1921", "1921", "1921", "1921", "St.", "St."]
    answers = ["nineteen twenty one", "nineteen twenty one", "one thousand nine hundred twenty one",
               "one thousand nine hundred twenty one", "saint", "street"]
    memory = memorise(["x"] + previous[1:], tokens, answers)
    assert memory.recall("in", "1921", use_context=True) == "nineteen twenty one"
    assert memory.recall("on", "St.", use_context=False) in ("saint", "street")
    assert memory.recall("on", "unseen", use_context=True) is None


def test_a_key_made_of_two_columns_is_found_by_content(tmp_path: Path) -> None:
    test = pd.DataFrame({"sentence_id": ["7", "7", "8"], "token_id": ["0", "1", "0"], "before": ["a", "12", "b"]})
    train = pd.DataFrame({"sentence_id": ["0", "0"], "token_id": ["0", "1"], "before": ["x", "y"], "after": ["x", "y"]})
    sample = pd.DataFrame({"id": ["7_0", "7_1", "8_0"], "after": ["a", "12", "b"]})
    tables = [Logical(["sample.csv"], sample), Logical(["test.csv"], test), Logical(["train.csv"], train)]
    out, keys, evidence = find_composed_keys(tables)
    assert [(k.column, k.parts, k.separator) for k in keys] == [("id", ["sentence_id", "token_id"], "_")]
    assert out[1].frame["id"].tolist() == ["7_0", "7_1", "8_0"] and out[2].frame["id"].tolist() == ["0_0", "0_1"]
    assert "sentence_id" in evidence[0]
    # Ids that merely hold an underscore ("0013_01") compose nothing when no columns spell them.
    plain = [Logical(["s.csv"], pd.DataFrame({"PassengerId": ["0013_01", "0014_01"], "y": ["0", "1"]})),
             Logical(["t.csv"], pd.DataFrame({"PassengerId": ["0013_01", "0014_01"], "age": ["3", "4"]}))]
    assert find_composed_keys(plain)[1] == []


def test_made_normalisation_files_are_learnt_beyond_the_memorised_pairs(tmp_path: Path) -> None:
    """The large-competition maker at a small size: its train and test as the solver reads them,
    the pairs memorised in numpy (the same answers as row by row), and rules for the unseen
    numbers lifting the test accuracy above the memorisation baseline the maker computes."""
    root, scores = normalisation_files(tmp_path / "tn", 30_000, zipped=False)
    train = pd.read_csv(root / "data" / "en_train.csv", dtype=str, keep_default_na=False)
    test = pd.read_csv(root / "data" / "en_test_2.csv", dtype=str, keep_default_na=False)
    truth = pd.read_csv(root / "private" / "answers.csv", dtype=str, keep_default_na=False)["after"].tolist()
    assert list(train.columns) == ["sentence_id", "token_id", "class", "before", "after"] and len(test) == len(truth)
    assert scores["keep_input"] < scores["memorised"] < 1.0
    previous = [""] + train["before"].tolist()[:-1]
    memory = memorise(previous, train["before"].tolist(), train["after"].tolist())
    rules = fit_rules(list(zip(train["before"], train["after"])), previous)
    tokens = test["before"].tolist()
    before = [""] + tokens[:-1]
    recalled = memory.recall_all(before, tokens, use_context=True)
    assert list(recalled) == [memory.recall(b, t, use_context=True) for b, t in zip(before, tokens)]
    said = [r if r is not None else (rules.say(t, b) or t) for r, t, b in zip(recalled, tokens, before)]
    accuracy = sum(s == a for s, a in zip(said, truth)) / len(truth)
    assert accuracy > scores["memorised"] + 0.005, (accuracy, scores)
