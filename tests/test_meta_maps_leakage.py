"""The maps meta check's leakage test: a test map that repeats the train file is caught, while a
constant column, or a modality that repeats while another does not, is no evidence of it."""

from __future__ import annotations

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
