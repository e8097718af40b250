"""Checks over several stages at once (Agent K's meta-unit tests).

`check_maps` checks that the maps fit together and that a batch of rows stacks as the networks read it;
`check_light_solve` runs the solver on a subsample and validates the submission it writes.
Both run solver code in the sandbox: the setup's generated modules are never imported here.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentk.core.lookup_rows import listed_pairs, packed_pairs
from agentk.core.pixels import PIXEL_TASK, image_keys
from agentk.core.readers import read_table
from agentk.core.sandbox.sandbox import Limits
from unit_tests_setup.context import CheckContext
from agentk.core.artifacts import SetupLayout
from agentk.core.maps import MapError, id_text, read_map
from unit_tests_setup.files import find_sample_submission
from unit_tests_setup.submission_rules import validate_against_setup

import numpy as np
import pandas as pd


def check_maps(ctx: CheckContext) -> list[str]:
    layout = ctx.layout
    try:
        target = read_map(layout.target_map)["id"]
        train_maps = {p.name: read_map(p) for p in layout.input_maps("train")}
        test_maps = {p.name: read_map(p) for p in layout.input_maps("test")}
    except MapError as exc:
        return [str(exc)]
    problems: list[str] = []
    if not train_maps or not test_maps:
        return ["there must be at least one train and one test input map"]
    for name, frame in train_maps.items():
        if not _same_ids(target, frame["id"]):
            problems.append(f"{name} and {SetupLayout.TARGET_MAP} disagree on ids: {_id_diff(_ids(target), _ids(frame))}")
    reference_name, reference = next(iter(test_maps.items()))
    for name, frame in test_maps.items():
        if not _same_ids(reference["id"], frame["id"]):
            problems.append(f"{name} and {reference_name} disagree on ids: "
                            f"{_id_diff(_ids(reference), _ids(frame))}")
    reference_ids = _ids(reference)
    if _same_rows(train_maps, test_maps):
        problems.append("every test row also appears in the train map with the same inputs: the test map "
                        "looks like it was built from the train file")
    problems += sample_id_problems(ctx, reference_ids)
    if problems:
        return problems
    return _probe_batch(ctx)


def sample_id_problems(ctx: CheckContext, reference_ids: set) -> list[str]:
    """Test ids the sample submission lacks, and ids it has that no test map holds; none without
    a sample. Also what a hand-in without a model asks of the sample once the test maps exist."""
    sample = find_sample_submission(ctx.workspace.raw, ctx.plan())
    if sample is None:
        return []
    problems: list[str] = []
    lookup = (ctx.plan().get("facts") or {}).get("lookup")
    if isinstance(lookup, dict):
        try:
            sample_ids = _listed_entities(ctx.workspace.raw, sample, lookup)
        except (OSError, KeyError, ValueError) as exc:
            return [f"the lookup table {lookup.get('file')!r} does not map the sample's rows: {exc}"]
    else:
        sample_ids = _sample_ids(sample, ctx.plan().get("id_column"), by_picture=_picture_target(ctx))
    if ctx.plan().get("task_type") == "mask":
        # A segmentation sample may name each picture with its extension (`a1.jpg`).
        sample_ids = {i if i in reference_ids else Path(i).stem for i in sample_ids}
    missing = reference_ids - sample_ids
    if missing:
        problems.append(f"{len(missing)} test ids are missing from the sample submission {sample.name} (e.g. {sorted(missing)[0]!r})")
    absent = sample_ids - reference_ids
    if absent:
        problems.append(f"{len(absent)} ids of the sample submission {sample.name} are not in the test maps (e.g. {sorted(absent)[0]!r})")
    return problems


def _same_rows(train_maps: dict[str, pd.DataFrame], test_maps: dict[str, pd.DataFrame]) -> bool:
    """Leakage is judged by content, not ids: Kaggle's train and test ids often both start at 1.
    A test row is new when any of its modalities is new, so every comparable map must repeat the
    train file; a map whose test rows are all alike (a constant column) proves nothing either way."""
    compared = False
    for code in ("tab", "txt"):
        name, test_name = SetupLayout.input_map_name("train", code), SetupLayout.input_map_name("test", code)
        if name not in train_maps or test_name not in test_maps:
            continue
        train, test = train_maps[name].drop(columns="id"), test_maps[test_name].drop(columns="id")
        if test.shape[1] == 0 or len(test) < 5 or list(train.columns) != list(test.columns):
            continue
        # Numbers and booleans of one dtype on both sides are the same text exactly when they are
        # the same value: compared as values (text of a million cells took most of a minute).
        native = [i for i, (a, b) in enumerate(zip(train.dtypes, test.dtypes)) if a == b and a.kind in "iufb"]
        texts = sorted(set(range(test.shape[1])) - set(native))
        test_cells, train_cells = _cell_hashes(test, native), _cell_hashes(train, native)
        if _surely_new(test_cells, train_cells):
            return False
        test_rows = _row_hashes(np.hstack([test_cells, _cell_hashes(test, texts, as_text=True)]))
        if not (test_rows != test_rows[:1]).any():
            continue
        train_rows = _row_hashes(np.hstack([train_cells, _cell_hashes(train, texts, as_text=True)]))
        if not _all_in(test_rows, train_rows):
            return False
        compared = True
    return compared


def _cell_hashes(frame: pd.DataFrame, columns: list[int], as_text: bool = False) -> np.ndarray:
    """One hash per cell of those columns (rows x columns), of its value or of its text, in one
    pass per dtype."""
    hashes = np.empty((len(frame), len(columns)), dtype=np.uint64)
    groups: dict[object, list[int]] = {}
    dtypes = list(frame.dtypes)
    for j, i in enumerate(columns):
        groups.setdefault(dtypes[i], []).append(j)
    for at in groups.values():
        block = frame.iloc[:, [columns[j] for j in at]]
        values = (block.astype(str) if as_text else block).to_numpy()
        hashes[:, at] = pd.util.hash_array(values.ravel()).reshape(values.shape)
    return hashes


def _row_hashes(cells: np.ndarray) -> np.ndarray:
    """One hash per row of its cells' hashes. Position matters (a row is its columns in order):
    each column's hash gets its own odd weight."""
    weights = (np.arange(cells.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    with np.errstate(over="ignore"):
        return (cells * weights).sum(axis=1, dtype=np.uint64)


def _surely_new(mine: np.ndarray, theirs: np.ndarray) -> bool:
    """The verdict comparing whole rows would give, False, found from single columns' cell hashes:
    the test rows differ in some column and some test cell is in no train row's same column.
    Columns are looked at in doubling batches: on a million rows the first often settles it, and
    thousands of columns are settled in a dozen vectorised passes rather than one per column. A
    hash collision could only leave the verdict to the whole rows."""
    if not mine.size or not (mine != mine[:1]).any():
        return False  # the test rows agree in every such column: nothing to tell them apart
    # A cell is named by (column, value): the column's position mixed into the value's hash.
    salt = np.arange(mine.shape[1], dtype=np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    start, width = 0, 1
    while start < mine.shape[1]:
        part = slice(start, start + width)
        if not _all_in((mine[:, part] ^ salt[part]).ravel(), (theirs[:, part] ^ salt[part]).ravel()):
            return True
        start, width = start + width, width * 2
    return False


def _all_in(mine: np.ndarray, theirs: np.ndarray) -> bool:
    """Whether every hash of `mine` is among `theirs`, by a hash table (numpy's isin sorts both:
    seconds at ten million)."""
    return bool(pd.Series(mine).isin(theirs).all())


def _picture_target(ctx: CheckContext) -> bool:
    """Whether the target is a picture (target_info says so): the sample then lists its pixels."""
    try:
        info = json.loads(ctx.layout.target_info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(isinstance(t, dict) and t.get("task") == PIXEL_TASK for t in info.get("targets", []))


def _sample_ids(sample, id_column: str | None, by_picture: bool = False) -> set[str]:
    """The sample's ids; for a picture target, the pictures its pixel ids name."""
    frame = read_table(sample)
    column = id_column if id_column in frame.columns else frame.columns[0]
    if by_picture:
        return image_keys(frame[column])
    return set(id_text(frame[column].astype(str)).tolist())


def _listed_entities(raw: Path, sample: Path, lookup: dict) -> set[str]:
    """The test rows a long sample's rows name through its lookup table (plan facts' `lookup`)."""
    ids = read_table(sample)[lookup["key"]]
    if lookup.get("packed"):
        return set(packed_pairs(ids, int(lookup["packed"]))["entity"].tolist())
    pairs = listed_pairs(read_table(raw / lookup["file"]), ids, lookup["key"], lookup["entity"], lookup["name"])
    return set(pairs["entity"].tolist())


def _ids(frame: pd.DataFrame | pd.Series) -> set:
    """A map's ids as a set (listed first: Arrow-backed cells taken one by one cost seconds)."""
    return set((frame["id"] if isinstance(frame, pd.DataFrame) else frame).tolist())


def _same_ids(one: pd.Series, other: pd.Series) -> bool:
    """Whether two maps hold the same set of ids; maps written alike list them in the same order,
    which settles it without a set of ten million strings."""
    if len(one) == len(other) and one.reset_index(drop=True).equals(other.reset_index(drop=True)):
        return True
    return _ids(one) == _ids(other)


def _id_diff(expected: set[str], found: set[str]) -> str:
    missing, extra = sorted(expected - found), sorted(found - expected)
    return f"{len(missing)} missing (e.g. {missing[:2]}), {len(extra)} extra (e.g. {extra[:2]})"


def _probe_batch(ctx: CheckContext) -> list[str]:
    result = ctx.run_solver_code(
        ["-m", "unit_tests_setup.probe_batch", str(ctx.workspace.root)],
        limits=Limits(timeout_s=ctx.budget.probe_timeout_s),
        log_prefix=ctx.workspace.logs / "meta_maps_probe",
    )
    if not result.ok:
        return [f"a batch over the maps failed: {result.error_summary(max_lines=12)}"]
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return ["the batch probe printed no batch"]
    batch = json.loads(lines[-1])
    if batch.get("rows", 0) < 1:
        return ["the maps yielded an empty batch"]
    return []


def check_light_solve(ctx: CheckContext) -> list[str]:
    out = ctx.workspace.solve / "meta_submission.csv"
    out.unlink(missing_ok=True)
    result = ctx.run_solver_code(
        ["-m", "solve_pipeline.solver", str(ctx.workspace.root), "--light", "--out", str(out)],
        limits=Limits(timeout_s=ctx.budget.light_solve_timeout_s),
        on_stdout_line=ctx.on_solver_line,
        log_prefix=ctx.workspace.logs / "meta_light_solve",
    )
    if not result.ok:
        return [f"the light solve failed: {result.error_summary(max_lines=15)}"]
    if not out.exists():
        return ["the light solve wrote no submission"]
    return [f"light-solve submission: {p}" for p in validate_against_setup(ctx.workspace, out, ctx.plan())]


