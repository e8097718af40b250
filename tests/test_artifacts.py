"""The artifact contract: the setup layout, the one map reader, the prediction frame, the records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.artifacts import SetupLayout
from agentk.core.maps import MapError, read_map, write_map
from agentk.core.metrics import Direction
from agentk.core.predictions import TargetSpec, prediction_frame
from agentk.core.records.results import RunResult, SolveResult, run_direction


def test_layout_names_the_setup_files(tmp_path: Path) -> None:
    layout = SetupLayout(tmp_path)
    assert layout.input_map("test", "txt") == tmp_path / "test_txt_input_map.csv"
    assert layout.plan.name == "plan.json" and layout.module("metric").name == "code_metric.py"


def test_layout_names_and_paths_agree(tmp_path: Path) -> None:
    layout = SetupLayout(tmp_path)
    assert layout.target_map_roundtrip == tmp_path / SetupLayout.TARGET_MAP_ROUNDTRIP
    assert SetupLayout.input_map_code_name("train", "tab") == "code_train_tab_input_map.py"
    assert SetupLayout.module_name("submission") == layout.module("submission").name
    for name in ("test_txt_input_map.csv", "test_tab_input_map.csv", "train_tab_input_map.csv"):
        (tmp_path / name).write_text("id\n")
    assert [p.name for p in layout.input_maps("test")] == ["test_tab_input_map.csv", "test_txt_input_map.csv"]


def test_fingerprint_files_are_the_modules_then_target_info(tmp_path: Path) -> None:
    for name in ("code_metric.py", "code_a.py", "plan.json"):
        (tmp_path / name).write_text("")
    names = [p.name for p in SetupLayout(tmp_path).fingerprint_files()]
    assert names == ["code_a.py", "code_metric.py", "target_info.json"]


def test_read_map_keeps_ids_as_stripped_text_and_missing_ids_missing(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("id,x\n007 ,1\n,2\n 12,3\n")
    frame = read_map(path)
    assert frame["id"].iloc[0] == "007" and frame["id"].iloc[2] == "12" and pd.isna(frame["id"].iloc[1])
    assert frame["x"].tolist() == [1, 2, 3]


def test_read_map_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="was not written"):
        read_map(tmp_path / "absent.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(MapError, match="cannot be read as CSV"):
        read_map(tmp_path / "empty.csv")


def _inverse(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["label"] = out["label"].map({0: "cat", 1: "dog"})
    out["price"] = out["price"] * 10
    return out


TARGETS = [TargetSpec("label", "binary", ["cat", "dog"]), TargetSpec("price", "regression")]
OUTPUTS = {"label": np.array([[0.8, 0.2], [0.4, 0.6]]), "price": np.array([1.0, 2.0])}


@pytest.mark.parametrize("cells", [
    ["a b", " padded ", "", "é\t"],  # nothing to quote: Arrow writes it
    ["a,b", 'say "hi"', "two\nlines", "cr\ronly"],  # quotes needed: pandas writes it
])
def test_write_map_writes_what_pandas_writes(tmp_path: Path, cells: list[str]) -> None:
    text = pd.DataFrame({"id": ["1", "2", "3", "4"], "t": cells, "u": pd.Series(["p", None, "q", ""], dtype="str")})
    mixed = text.assign(n=[1, 2, 3, 4])
    for frame in (text, mixed, text[["id"]]):
        write_map(frame, tmp_path / "ours.csv")
        frame.to_csv(tmp_path / "pandas.csv", index=False, lineterminator="\r\n")
        assert (tmp_path / "ours.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_write_map_on_a_pyarrow_without_newer_write_options(tmp_path: Path, monkeypatch) -> None:
    """pyarrow before `eol`/`quoting_header` (the GPU machine's image had one) refuses the options:
    the map is still written, by pandas, with the same bytes."""
    import pyarrow.csv as pa_csv

    refused = []

    def old_write_options(**kwargs):
        refused.append(kwargs)
        if "eol" in kwargs or "quoting_header" in kwargs:
            raise TypeError("__init__() got an unexpected keyword argument 'eol'")
        return original(**kwargs)

    original = pa_csv.WriteOptions
    monkeypatch.setattr(pa_csv, "WriteOptions", old_write_options)
    frame = pd.DataFrame({"id": ["1", "2"], "t": ["a b", "c"]}, dtype="str")
    write_map(frame, tmp_path / "ours.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False, lineterminator="\r\n")
    assert (tmp_path / "ours.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes() == b"id,t\r\n1,a b\r\n2,c\r\n"
    assert refused, "the Arrow path was not tried"


def test_prediction_frame_has_labels_values_and_probabilities() -> None:
    frame = prediction_frame(["a", "b"], TARGETS, OUTPUTS, _inverse)
    assert list(frame.columns) == ["id", "label", "label__proba__cat", "label__proba__dog", "price"]
    assert frame["label"].tolist() == ["cat", "dog"] and frame["price"].tolist() == [10.0, 20.0]
    assert frame["label__proba__dog"].tolist() == [0.2, 0.6]


def test_prediction_frame_takes_chosen_classes_and_original_values() -> None:
    frame = prediction_frame(["a", "b"], TARGETS, OUTPUTS, _inverse, class_indices={"label": np.array([1, 1])},
                             regression_scale="original")
    assert frame["label"].tolist() == ["dog", "dog"] and frame["price"].tolist() == [1.0, 2.0]


def test_records_keep_their_keys_and_extras(tmp_path: Path) -> None:
    (tmp_path / "solve_result.json").write_text(json.dumps(
        {"model": "lgbm", "validation_score": 0.8, "higher_is_better": True, "future_key": 1,
         "candidates": [{"model": "lgbm", "validation_score": 0.8, "path": "solve/candidates/lgbm.csv"}]}))
    solve = SolveResult.read(tmp_path)
    assert solve.candidates[0].path == "solve/candidates/lgbm.csv" and solve.to_json()["future_key"] == 1
    assert SolveResult.read(tmp_path / "nowhere").model is None
    run = RunResult(competition_id="c", higher_is_better=False, kaggle={"best_public": 0.5})
    (tmp_path / "result.json").write_text(json.dumps(run.to_json()))
    again = RunResult.read(tmp_path / "result.json")
    assert again is not None and again.direction == Direction(False) and again.kaggle == {"best_public": 0.5}
    assert "kaggle" not in RunResult(competition_id="c").to_json()
    assert RunResult.read(tmp_path / "absent.json") is None


def test_run_direction_prefers_the_plan_and_never_guesses() -> None:
    assert run_direction({"higher_is_better": False}, SolveResult(higher_is_better=True)) == Direction(False)
    assert run_direction({}, SolveResult(higher_is_better=True)) == Direction(True)
    assert run_direction({"higher_is_better": "yes"}, SolveResult()) is None


def test_ids_have_one_spelling_whole_floats_included() -> None:
    from agentk.core.maps import id_text

    values = pd.Series([" 892.0", "893", "007", "1.50", "0013_01", "-4.00", "1e3"])
    assert id_text(values).tolist() == ["892", "893", "007", "1.50", "0013_01", "-4", "1e3"]
