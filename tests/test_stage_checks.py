"""The task-agnostic stage checks fail on bad outputs (each one is shown failing for a reason a
policy could really produce) and pass on good ones."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from agentk.core.records.workspace import Workspace
from unit_tests_setup import stage_checks
from unit_tests_setup.context import CheckContext


@pytest.fixture()
def ctx(tmp_path: Path) -> CheckContext:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    (workspace.raw / "data").mkdir()
    (workspace.raw / "description.md").write_text("# A task\nPredict `label` for each `image_id`.\n")
    pd.DataFrame({"image_id": ["a", "b"], "label": [0, 1]}).to_csv(workspace.raw / "data" / "train.csv", index=False)
    return CheckContext(workspace=workspace)


def write(ctx: CheckContext, name: str, frame: pd.DataFrame) -> None:
    frame.to_csv(ctx.setup / name, index=False)


def test_image_map_needs_paths_to_existing_image_files(ctx: CheckContext) -> None:
    check = stage_checks.input_map_check("train", "img")
    image = ctx.workspace.raw / "data" / "a.png"
    Image.new("L", (4, 4)).save(image)
    write(ctx, "train_img_input_map.csv", pd.DataFrame({"id": ["a", "b"], "path": ["../raw/data/a.png", "../raw/data/b.png"]}))
    assert "do not exist" in check(ctx)[0]
    write(ctx, "train_img_input_map.csv", pd.DataFrame({"id": ["a", "b"], "path": ["x.txt", "y.txt"]}))
    assert "no column of paths to image files" in check(ctx)[0]
    Image.new("L", (4, 4)).save(ctx.workspace.raw / "data" / "b.png")
    write(ctx, "train_img_input_map.csv", pd.DataFrame({"id": ["a", "b"], "path": ["../raw/data/a.png", "../raw/data/b.png"]}))
    assert check(ctx) == []


def test_maps_need_id_first_unique_ids_and_no_duplicated_columns(ctx: CheckContext) -> None:
    check = stage_checks.input_map_check("train", "tab")
    write(ctx, "train_tab_input_map.csv", pd.DataFrame({"key": [1, 2], "x": [0.1, 0.2]}))
    assert "first column must be named 'id'" in check(ctx)[0]
    write(ctx, "train_tab_input_map.csv", pd.DataFrame({"id": [1, 1], "x": [0.1, 0.2]}))
    assert "duplicated" in check(ctx)[0]
    (ctx.setup / "train_tab_input_map.csv").write_text("id,x,x\n1,2,3\n")
    assert "duplicated column" in check(ctx)[0]
    (ctx.setup / "train_tab_input_map.csv").write_text("")
    assert "cannot be read" in check(ctx)[0]


def test_test_map_must_have_the_train_maps_columns(ctx: CheckContext) -> None:
    write(ctx, "train_tab_input_map.csv", pd.DataFrame({"id": [1, 2], "x": [0.1, 0.2], "y": [1, 2]}))
    write(ctx, "test_tab_input_map.csv", pd.DataFrame({"id": [3], "x": [0.3]}))
    assert "columns differ" in stage_checks.input_map_check("test", "tab")(ctx)[0]


def test_modalities_must_match_the_files(ctx: CheckContext) -> None:
    (ctx.setup / "modalities.json").write_text(json.dumps({"input_modalities": ["image"], "target_modality": "tabular"}))
    assert "no image files" in stage_checks.check_modalities(ctx)[0]
    (ctx.setup / "modalities.json").write_text('{"input_modalities": ["tabular"], "target_modality": "tabular",}')
    assert "not valid JSON" in stage_checks.check_modalities(ctx)[0]
    (ctx.setup / "modalities.json").write_text(json.dumps({"input_modalities": ["tabular"], "target_modality": "tabular"}))
    assert stage_checks.check_modalities(ctx) == []


def test_plan_columns_must_exist_somewhere(ctx: CheckContext) -> None:
    plan = {"steps": ["read"], "id_column": "image_id", "target_columns": ["digit"], "task_type": "multiclass", "metric": "accuracy"}
    (ctx.setup / "plan.json").write_text(json.dumps(plan))
    assert "'digit' appears in no data file header" in stage_checks.check_plan(ctx)[0]
    (ctx.setup / "plan.json").write_text(json.dumps({**plan, "target_columns": ["label"]}))
    assert stage_checks.check_plan(ctx) == []
    (ctx.setup / "plan.json").write_text(json.dumps([plan]))
    assert "must be a JSON object" in stage_checks.check_plan(ctx)[0]
    # Images and no table: nothing but the page could name a column, so invented names pass.
    (ctx.setup / "plan.json").write_text(json.dumps({**plan, "id_column": "id", "target_columns": ["digit"]}))
    (ctx.workspace.raw / "data" / "train.csv").unlink()
    assert "'digit' appears in no data file header" in stage_checks.check_plan(ctx)[0]  # no images either
    (ctx.workspace.raw / "data" / "seven").mkdir()
    Image.new("L", (4, 4)).save(ctx.workspace.raw / "data" / "seven" / "a.png")
    assert stage_checks.check_plan(ctx) == []


def test_submission_without_a_sample_may_echo_a_blank_input(ctx: CheckContext) -> None:
    """No sample: a column the plan says repeats a test input keeps that input's blanks."""
    plan = {"steps": ["read"], "id_column": "image_id", "target_columns": ["label"], "task_type": "binary",
            "metric": "accuracy", "submission_columns": ["label", "image_id", "camera"]}
    (ctx.setup / "plan.json").write_text(json.dumps(plan))
    write(ctx, "test_tab_input_map.csv", pd.DataFrame({"id": ["c", "d"], "camera": ["x1", ""]}))
    write(ctx, ctx.layout.SUBMISSION_FORMAT_CHECK, pd.DataFrame({"label": [0, 1], "image_id": ["c", "d"], "camera": ["x1", ""]}))
    assert "column 'camera': 1 missing value(s)" in stage_checks.check_submission_format(ctx)[0]
    (ctx.setup / "plan.json").write_text(json.dumps({**plan, "echo_columns": ["camera"]}))
    assert stage_checks.check_submission_format(ctx) == []


def test_target_transform_roundtrip_must_give_back_the_labels(ctx: CheckContext) -> None:
    write(ctx, "train_tab_target_map.csv", pd.DataFrame({"id": ["a", "b", "c"], "y": ["cat", "dog", "cat"]}))
    write(ctx, "train_tab_target_map_transformed.csv", pd.DataFrame({"id": ["a", "b", "c"], "y": [0, 1, 0]}))
    (ctx.setup / "target_info.json").write_text(json.dumps({"targets": [{"column": "y", "task": "binary", "classes": ["cat", "dog"]}]}))
    write(ctx, "train_tab_target_map_roundtrip.csv", pd.DataFrame({"id": ["a", "b", "c"], "y": ["cat", "cat", "cat"]}))
    assert "does not give back the original labels" in stage_checks.check_target_transform(ctx)[0]
    write(ctx, "train_tab_target_map_roundtrip.csv", pd.DataFrame({"id": ["a", "b", "c"], "y": ["cat", "dog", "cat"]}))
    assert stage_checks.check_target_transform(ctx) == []
    write(ctx, "train_tab_target_map_transformed.csv", pd.DataFrame({"id": ["a", "b", "c"], "y": [0, 2, 0]}))
    assert "integers in 0..1" in stage_checks.check_target_transform(ctx)[0]


def test_metric_must_prefer_correct_predictions_in_its_stated_direction(ctx: CheckContext) -> None:
    write(ctx, "train_tab_target_map.csv", pd.DataFrame({"id": ["a", "b"], "y": [0, 1]}))
    (ctx.setup / "metric_check.json").write_text(json.dumps({"perfect": 0.0, "shuffled": 0.7, "higher_is_better": True}))
    assert "does not prefer correct predictions" in stage_checks.check_metric(ctx)[0]
    (ctx.setup / "metric_check.json").write_text(json.dumps({"perfect": 0.0, "shuffled": 0.7, "higher_is_better": False}))
    assert stage_checks.check_metric(ctx) == []
    (ctx.setup / "metric_check.json").write_text(json.dumps({"perfect": float("nan"), "shuffled": 0.7, "higher_is_better": False}))
    assert "finite" in stage_checks.check_metric(ctx)[0]
