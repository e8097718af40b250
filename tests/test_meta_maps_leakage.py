"""The maps meta check's leakage test: a test map that repeats the train file is caught, while a
constant column, or a modality that repeats while another does not, is no evidence of it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentk.core.artifacts import SetupLayout
from unit_tests_setup.meta_checks import _same_rows


def maps(split: str, ids: range, country: list[str], text: list[str]) -> dict[str, pd.DataFrame]:
    key = [str(i) for i in ids]
    return {SetupLayout.input_map_name(split, "tab"): pd.DataFrame({"id": key, "country": country}),
            SetupLayout.input_map_name(split, "txt"): pd.DataFrame({"id": key, "text": text})}


def test_a_test_map_copied_from_train_is_leakage() -> None:
    sentences = [f"sentence {i}" for i in range(20)]
    train = maps("train", range(20), ["US", "UK"] * 10, sentences)
    test = maps("test", range(100, 110), (["US", "UK"] * 5), sentences[:10])
    assert _same_rows(train, test)


def test_a_constant_column_beside_new_text_is_not_leakage() -> None:
    train = maps("train", range(20), ["US"] * 20, [f"train sentence {i}" for i in range(20)])
    test = maps("test", range(100, 110), ["US"] * 10, [f"test sentence {i}" for i in range(10)])
    assert not _same_rows(train, test)
    only_tab = {k: v for k, v in test.items() if "tab" in k}
    assert not _same_rows(train, only_tab)  # constant inputs alone prove nothing


def test_repeated_tables_with_new_text_are_not_leakage() -> None:
    train = maps("train", range(20), ["US", "UK"] * 10, [f"train sentence {i}" for i in range(20)])
    test = maps("test", range(100, 110), ["US", "UK"] * 5, [f"test sentence {i}" for i in range(10)])
    assert not _same_rows(train, test)


def test_numbers_are_judged_as_their_text_whatever_the_column_dtypes() -> None:
    """A quick look at single columns decides only where hashing the rows as text would agree."""
    name, test_name = SetupLayout.input_map_name("train", "tab"), SetupLayout.input_map_name("test", "tab")
    train = pd.DataFrame({"id": [str(i) for i in range(20)], "x": [i / 7 for i in range(20)], "city": ["a", "b"] * 10})
    copied = train.iloc[5:15].assign(id=[str(i) for i in range(100, 110)])
    assert _same_rows({name: train}, {test_name: copied})
    new_number = copied.assign(x=copied["x"].where(copied.index != 7, 99.5))
    assert not _same_rows({name: train}, {test_name: new_number})
    # 3 (int) and 3.0 (float) are one value but two texts: a copy whose column lost its fraction is new.
    whole = pd.DataFrame({"id": [str(i) for i in range(20)], "x": [float(i) for i in range(20)], "city": ["a"] * 20})
    as_int = whole.iloc[:10].assign(id=[str(i) for i in range(100, 110)], x=range(10))
    assert not _same_rows({name: whole}, {test_name: as_int})
    assert _same_rows({name: whole}, {test_name: as_int.assign(x=as_int["x"].astype(float))})


def test_a_wide_copy_is_caught_and_one_new_cell_in_its_last_column_clears_it() -> None:
    """Thousands of number columns are settled in batches: a copy is found by whole rows, and a
    single new value in the last column still proves a test row new."""
    name, test_name = SetupLayout.input_map_name("train", "tab"), SetupLayout.input_map_name("test", "tab")
    rng = np.random.default_rng(0)
    train = pd.DataFrame(rng.integers(0, 3, size=(40, 1500)), columns=[f"c{j}" for j in range(1500)])
    train.insert(0, "id", [str(i) for i in range(40)])
    copied = train.iloc[:10].assign(id=[str(i) for i in range(100, 110)])
    assert _same_rows({name: train}, {test_name: copied})
    new_cell = copied.copy()
    new_cell.iloc[3, -1] = 7  # a value no train row has in that column
    assert not _same_rows({name: train}, {test_name: new_cell})
    # Every cell of this row is seen in its column (0, 1 or 2), the row as a whole in no train row.
    shuffled = copied.copy()
    shuffled.iloc[3, 1:] = train.iloc[20, 1:].to_numpy()[::-1]
    assert not (train.iloc[:, 1:] == shuffled.iloc[3, 1:].to_numpy()).all(axis=1).any()
    assert not _same_rows({name: train}, {test_name: shuffled})
