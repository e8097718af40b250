"""Task-agnostic checks of each setup stage's output. Each returns a list of problems (empty = pass).

They read only what the stage wrote (and raw/ for plausibility), so any policy can be judged by them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from unit_tests_setup.context import CheckContext
from agentk.core.artifacts import DENSE_TASKS, MODALITY_CODES, TARGET_MODALITIES, TASKS, TEXT_TASK, SetupLayout
from agentk.core.maps import MapError, map_columns, read_map
from agentk.core.metrics import normalise_labels
from agentk.core.metrics.direction import Direction
from agentk.core.pictures import PICTURES_FOLDER, is_picture
from agentk.core.pixels import resolve as resolve_path
from agentk.core.readers import is_audio
from unit_tests_setup.files import IMAGE_EXTENSIONS, csv_headers, has_audio, has_images, has_tables
from unit_tests_setup.submission_rules import validate_against_setup



def check_summary(ctx: CheckContext) -> list[str]:
    path, name = ctx.layout.summary, SetupLayout.SUMMARY
    if not path.exists():
        return [f"{name} was not written"]
    text = path.read_text(encoding="utf-8").strip()
    if len(text) < 40:
        return [f"{name} is too short to be a summary ({len(text)} characters)"]
    if len(text) > 12000:
        return [f"{name} is not a summary ({len(text)} characters; keep it under 12000)"]
    return []


def _load_json(ctx: CheckContext, name: str) -> tuple[dict, list[str]]:
    """The stage's JSON object, or the one problem that stops the check."""
    path = ctx.setup / name
    if not path.exists():
        return {}, [f"{name} was not written"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return {}, [f"{name} is not valid JSON: {exc}"]
    if not isinstance(data, dict):
        return {}, [f"{name} must be a JSON object"]
    return data, []


def check_modalities(ctx: CheckContext) -> list[str]:
    data, problems = _load_json(ctx, SetupLayout.MODALITIES)
    if problems:
        return problems
    inputs = data.get("input_modalities")
    if not isinstance(inputs, list) or not inputs:
        return ["input_modalities must be a non-empty list"]
    unknown = [m for m in inputs if m not in MODALITY_CODES]
    if unknown:
        return [f"unknown input modalities {unknown}; allowed: {sorted(MODALITY_CODES)}"]
    if len(set(inputs)) != len(inputs):
        problems.append("input_modalities has duplicates")
    target = data.get("target_modality")
    if target not in TARGET_MODALITIES:
        problems.append(f"target_modality must be one of {list(TARGET_MODALITIES)}")
    elif target == "image" and "image" not in inputs:
        problems.append("a picture target (target_modality 'image') needs pictures in: list 'image' as an input")
    raw = ctx.workspace.raw
    if "image" in inputs and not has_images(raw, ctx.setup / PICTURES_FOLDER):
        problems.append("'image' is listed but raw/ holds no image files")
    if "audio" in inputs and not has_audio(raw):
        problems.append("'audio' is listed but raw/data holds no sound files (WAV, FLAC, Ogg, AIFF, MP3)")
    if ({"tabular", "text"} & set(inputs)) and not has_tables(raw):
        problems.append("'tabular'/'text' is listed but raw/data holds no table files")
    return problems


def check_plan(ctx: CheckContext) -> list[str]:
    data, problems = _load_json(ctx, SetupLayout.PLAN)
    if problems:
        return problems
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
        problems.append("steps must be a non-empty list of strings")
    for key in ("id_column", "metric", "task_type"):
        if not isinstance(data.get(key), str) or not data[key]:
            problems.append(f"{key} must be a non-empty string")
    targets = data.get("target_columns")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t for t in targets):
        problems.append("target_columns must be a non-empty list of strings")
    if data.get("task_type") not in (*TASKS, *DENSE_TASKS, TEXT_TASK):
        problems.append(f"task_type must be one of {sorted((*TASKS, *DENSE_TASKS, TEXT_TASK))}")
    if problems:
        return problems
    # Plausibility: the named columns exist in the data files (or, for ids only in image file
    # names, at least in the description's text).
    known = {column for header in csv_headers(ctx.workspace.raw).values() for column in header}
    if not known and (has_images(ctx.workspace.raw) or has_audio(ctx.workspace.raw)):
        # Images or clips in class folders and no table at all: a page stating no format names no
        # columns either, so the setup names the id (file stem) and the label itself.
        return problems
    description = (ctx.workspace.raw / "description.md").read_text(encoding="utf-8", errors="replace")
    for column in [data["id_column"], *targets]:
        if column not in known and column not in description:
            problems.append(f"column {column!r} appears in no data file header nor in the description")
    return problems


def input_map_check(split: str, code: str) -> Callable[[CheckContext], list[str]]:
    name = SetupLayout.input_map_name(split, code)

    def check(ctx: CheckContext) -> list[str]:
        frame, problems = _read_checked_map(ctx, name)
        if problems:
            return problems
        features = frame.columns[1:]
        if code == "txt" and not any(_is_text(frame[c]) for c in features):
            problems.append(f"{name} has no column of text")
        if code == "img":
            problems.extend(_image_path_problems(frame, ctx.setup, name))
        if code == "aud":
            problems.extend(_audio_path_problems(frame, ctx.setup, name))
        if split == "test":
            train_path = ctx.layout.input_map("train", code)
            if train_path.exists():
                train_columns = map_columns(train_path)
                if list(frame.columns) != train_columns:
                    problems.append(f"{name} columns differ from the train map's: {_diff(train_columns, list(frame.columns))}")
        return problems

    check.__name__ = f"check_{split}_{code}_input_map"
    return check


def _read_checked_map(ctx: CheckContext, name: str) -> tuple[pd.DataFrame, list[str]]:
    """The map and the problems every map can have (unreadable, no id first, duplicated ids...)."""
    try:
        frame = read_map(ctx.setup / name)
    except MapError as exc:
        return pd.DataFrame(), [str(exc)]
    return frame, _common_map_problems(frame, name)


def _common_map_problems(frame: pd.DataFrame, name: str) -> list[str]:
    problems = []
    if frame.columns.size == 0 or frame.columns[0] != "id":
        problems.append(f"{name}: the first column must be named 'id' (found {list(frame.columns[:3])})")
    if frame.columns.duplicated().any() or any(str(c).split(".")[-1].isdigit() and str(c).rsplit(".", 1)[0] in frame.columns for c in frame.columns):
        problems.append(f"{name} has duplicated column names")
    if len(frame) == 0:
        problems.append(f"{name} has no rows")
    if frame.shape[1] < 2:
        problems.append(f"{name} has no column besides id")
    if problems:
        return problems
    ids = frame["id"]
    if ids.isna().any():
        problems.append(f"{name}: {int(ids.isna().sum())} ids are missing")
    if ids.duplicated().any():
        problems.append(f"{name}: {int(ids.duplicated().sum())} ids are duplicated (e.g. {ids[ids.duplicated()].iloc[0]!r})")
    return problems


def _is_text(series: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _image_path_problems(frame: pd.DataFrame, setup: Path, name: str) -> list[str]:
    for column in frame.columns[1:]:
        values = frame[column].dropna().astype(str)
        if values.empty:
            continue
        # Named like pictures, or (a DICOM named by its UID alone) the first few are pictures.
        if not values.str.lower().str.endswith(tuple(IMAGE_EXTENSIONS)).all() and \
                not all(is_picture(resolve_path(setup, v)) for v in values.head(5)):
            continue
        missing = [v for v in values if not resolve_path(setup, v).is_file()]
        if missing:
            return [f"{name}: {len(missing)} image paths in {column!r} do not exist (e.g. {missing[0]!r})"]
        return []
    return [f"{name} has no column of paths to image files ({sorted(IMAGE_EXTENSIONS)})"]


# Sound files are recognised by their first bytes, not their names; this many are opened per map.
_AUDIO_SNIFFED = 50


def _audio_path_problems(frame: pd.DataFrame, setup: Path, name: str) -> list[str]:
    """The map's `audio_path` column names existing files, and those sampled are sound files."""
    if "audio_path" not in frame.columns:
        return [f"{name} has no 'audio_path' column (paths of the sound files, relative to setup/)"]
    values = frame["audio_path"].dropna().astype(str)
    if values.empty:
        return [f"{name}: 'audio_path' is empty"]
    paths = [resolve_path(setup, v) for v in values]
    missing = [v for v, p in zip(values, paths) if not p.is_file()]
    if missing:
        return [f"{name}: {len(missing)} audio paths do not exist (e.g. {missing[0]!r})"]
    step = max(1, len(paths) // _AUDIO_SNIFFED)
    not_sound = [str(v) for v, p in list(zip(values, paths))[::step] if not is_audio(p)]
    if not_sound:
        return [f"{name}: {len(not_sound)} sampled 'audio_path' files are not sound files (e.g. {not_sound[0]!r})"]
    return []


def _diff(expected: list[str], found: list[str]) -> str:
    missing = [c for c in expected if c not in found][:5]
    extra = [c for c in found if c not in expected][:5]
    return f"missing {missing}, extra {extra}" if missing or extra else "same columns in another order"


def check_target_map(ctx: CheckContext) -> list[str]:
    name = SetupLayout.TARGET_MAP
    frame, problems = _read_checked_map(ctx, name)
    if problems:
        return problems
    targets = list(frame.columns[1:])
    numeric = len(targets) > 1 and all(pd.api.types.is_numeric_dtype(frame[c]) for c in targets)
    for column in targets:
        missing = int(frame[column].isna().sum())
        # Several numeric targets may each miss on some rows (each is learnt where present); a
        # row missing all of them, a label missing anywhere, or a target never given is a problem.
        if missing and (not numeric or missing == len(frame)):
            problems.append(f"{name}: target {column!r} has {missing} missing values (drop those rows from every train map)")
    blank = int(frame[targets].isna().all(axis=1).sum()) if numeric else 0
    if blank:
        problems.append(f"{name}: {blank} rows have no target at all (drop those rows from every train map)")
    if len(frame) < 2:
        problems.append(f"{name} needs at least two rows")
    return problems


def check_target_transform(ctx: CheckContext) -> list[str]:
    try:
        raw = read_map(ctx.layout.target_map)
        model = read_map(ctx.layout.target_map_transformed)
        roundtrip = read_map(ctx.layout.target_map_roundtrip)
    except MapError as exc:
        return [str(exc)]
    info, problems = _load_json(ctx, SetupLayout.TARGET_INFO)
    if problems:
        return problems
    targets = info.get("targets")
    if not isinstance(targets, list) or not targets:
        return [f"{SetupLayout.TARGET_INFO} must hold a non-empty 'targets' list"]
    if list(model.columns) != list(raw.columns) or not model["id"].equals(raw["id"]):
        return ["the transformed map must keep the target map's columns, ids and row order"]
    described = [t.get("column") for t in targets if isinstance(t, dict)]
    if described != list(raw.columns[1:]):
        problems.append(f"target_info describes {described} but the target map has {list(raw.columns[1:])}")
        return problems
    for target in targets:
        column, task, classes = target["column"], target.get("task"), target.get("classes")
        values = model[column]
        if task in DENSE_TASKS:  # a picture (or mask) target: its cells are paths
            problems.extend(_picture_target_problems(ctx, raw[column], model[column], roundtrip[column], column))
            continue
        if task == TEXT_TASK:  # a text target is learnt as text: the transform keeps it
            if not (_texts(raw[column]).equals(_texts(model[column])) and _texts(raw[column]).equals(_texts(roundtrip[column]))):
                problems.append(f"{column}: a text-to-text target keeps its texts through forward and inverse")
            if not isinstance(target.get("source"), str) or target["source"] not in _input_columns(ctx):
                problems.append(f"{column}: a text-to-text target names its input column ('source') in target_info")
            continue
        if task not in TASKS:
            problems.append(f"{column}: task must be one of {sorted(TASKS)}")
            continue
        # A regression target missing in the map (several targets, each kept where present) stays missing.
        given = raw[column].notna().to_numpy() if task == "regression" else np.ones(len(values), dtype=bool)
        if not pd.api.types.is_numeric_dtype(values) or not np.isfinite(values.to_numpy(dtype=float)[given]).all() \
                or values[~given].notna().any():
            problems.append(f"{column}: transformed values must be finite numbers" + (" (missing where the target is)" if (~given).any() else ""))
            continue
        if task != "regression":
            if not isinstance(classes, list) or len(classes) < 2:
                problems.append(f"{column}: a {task} target needs a 'classes' list of at least two labels")
                continue
            if task == "binary" and len(classes) != 2:
                problems.append(f"{column}: binary target with {len(classes)} classes")
            as_int = values.to_numpy(dtype=float)
            if not (np.equal(np.mod(as_int, 1), 0).all() and as_int.min() >= 0 and as_int.max() < len(classes)):
                problems.append(f"{column}: transformed classes must be integers in 0..{len(classes) - 1}")
            if not _same_labels(raw[column], roundtrip[column]):
                problems.append(f"{column}: inverse(forward(y)) does not give back the original labels")
        elif not _same_values(raw[column], roundtrip[column]):
            problems.append(f"{column}: inverse(forward(y)) does not give back the original values")
    return problems


def _picture_target_problems(ctx: CheckContext, raw: pd.Series, model: pd.Series, roundtrip: pd.Series,
                             column: str) -> list[str]:
    """A picture target: every cell names a picture that exists, and the transform keeps the paths."""
    missing = [v for v in raw.astype(str) if not resolve_path(ctx.setup, v).is_file()]
    if missing:
        return [f"{column}: {len(missing)} target pictures do not exist (e.g. {missing[0]!r}); a picture target "
                "holds each picture's path relative to setup/"]
    if not (raw.astype(str).equals(model.astype(str)) and raw.astype(str).equals(roundtrip.astype(str))):
        return [f"{column}: a picture target keeps its paths through forward and inverse"]
    return []


def _texts(values: pd.Series) -> pd.Series:
    return values.fillna("").astype(str).reset_index(drop=True)


def _input_columns(ctx: CheckContext) -> set[str]:
    columns: set[str] = set()
    for path in ctx.layout.input_maps("train"):
        try:
            columns |= set(map_columns(path))
        except MapError:
            continue
    return columns


def _same_labels(a: pd.Series, b: pd.Series) -> bool:
    return len(a) == len(b) and bool((normalise_labels(a.to_numpy()) == normalise_labels(b.to_numpy())).all())


def _same_values(a: pd.Series, b: pd.Series) -> bool:
    try:
        return len(a) == len(b) and bool(np.allclose(a.to_numpy(dtype=float), b.to_numpy(dtype=float), rtol=1e-6, atol=1e-9,
                                                     equal_nan=True))
    except (TypeError, ValueError):
        return False


def check_submission_format(ctx: CheckContext) -> list[str]:
    path = ctx.setup / SetupLayout.SUBMISSION_FORMAT_CHECK
    if not path.exists():
        return [f"{SetupLayout.SUBMISSION_FORMAT_CHECK} was not written"]
    return validate_against_setup(ctx.workspace, path, ctx.plan())


def check_metric(ctx: CheckContext) -> list[str]:
    data, problems = _load_json(ctx, SetupLayout.METRIC_CHECK)
    if problems:
        return problems
    perfect, shuffled, higher = data.get("perfect"), data.get("shuffled"), data.get("higher_is_better")
    if not isinstance(higher, bool):
        return ["HIGHER_IS_BETTER must be a bool"]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (perfect, shuffled)):
        return [f"the metric must return finite numbers (perfect={perfect}, shuffled={shuffled})"]
    truth = read_map(ctx.layout.target_map)
    if truth.iloc[:, 1:].nunique().max() <= 1:
        return []  # a constant target cannot tell a good prediction from a bad one
    if not Direction(higher).better(perfect, shuffled):
        way = "higher" if higher else "lower"
        return [f"the metric does not prefer correct predictions: perfect={perfect:.6g}, shuffled={shuffled:.6g} with {way} is better"]
    return []
