"""Code the expert writes for a detection task (`facts.masks` with `output="boxes"`): maps keyed by
picture, a target map of saved boxes (the training table's boxes gathered per picture once into
setup/boxes/), an identity transform that tells the solver the target is boxes, a submission of one
`conf x y w h ...` cell per picture, and the page's boxes metric. The conventions live in
`agentk.core.box_targets`."""

from __future__ import annotations

from setup_pipeline.expert.facts import DataFacts
from setup_pipeline.expert.mask_codegen import picture_map
from setup_pipeline.expert.mask_targets import MaskTask
from setup_pipeline.expert.pixel_codegen import kept_as_path, pictures

GATHERED = "boxes"  # setup/<GATHERED>/<picture>.npz: each training picture's boxes


def _task(facts: DataFacts) -> MaskTask:
    assert facts.masks is not None and facts.masks.output == "boxes"
    return facts.masks


def _table_boxes(task: MaskTask) -> str:
    """Lines that set `boxes`: each listed picture's boxes (a list of (n, 4) xywh arrays), by picture name."""
    return (
        "    from agentk.core.box_targets import row_boxes\n"
        "    from agentk.core.readers import read_table\n\n"
        f"    table = read_table(RAW / {task.table!r})\n"
        f"    names = table[{task.table_id!r}].astype(str).str.strip()\n"
        "    keys = names.where(~names.str.contains(r'\\.[A-Za-z]{3,4}$', regex=True), names.str.rsplit('.', n=1).str[0])\n"
        "    boxes = {}\n"
        f"    for key, cells in zip(keys, table[{task.box_columns!r}].itertuples(index=False)):\n"
        f"        boxes.setdefault(key, []).append(row_boxes(list(cells), {task.box_format!r}))\n")


def _labelled(task: MaskTask) -> str:
    if task.missing_is_empty:
        return ""  # the table lists only pictures with boxes: every other picture has none
    return _table_boxes(task) + "    paths = [p for p in paths if p.stem in boxes]  # unlisted pictures are unlabelled\n"


def image_map(facts: DataFacts, split: str) -> str:
    return picture_map(_task(facts), split, _labelled)


def target_map(facts: DataFacts) -> str:
    task = _task(facts)
    keep = "" if task.missing_is_empty else "    paths = [p for p in paths if p.stem in boxes]\n"
    return (
        "import numpy as np\n\n"
        "from agentk.core.box_targets import save_boxes\n"
        "from agentk.core.mask_targets import LABELS_SUFFIX, picture_shape\n\n\n"
        "def build_map() -> pd.DataFrame:\n" + _table_boxes(task) + pictures(task.train_dir, by_content=False) + keep +
        f"    folder = HERE / {GATHERED!r}\n"
        "    ids, targets = [], []\n"
        "    for path in paths:\n"
        "        own = np.concatenate(boxes.get(path.stem, []) + [np.zeros((0, 4))])\n"
        "        target = folder / (path.stem + LABELS_SUFFIX)\n"
        "        # Gathered once here: every reader of the target map reads a picture's boxes from one file.\n"
        "        save_boxes(own, picture_shape(path), target)\n"
        "        ids.append(path.stem)\n"
        "        targets.append(relative_to_setup(target))\n"
        f"    return pd.DataFrame({{'id': ids, {task.value_column!r}: targets}})\n")


def target_transform(facts: DataFacts) -> str:
    task = _task(facts)
    return kept_as_path("agentk.core.mask_targets.MASK_TASK", task.value_column, "boxes",
                        {"per_object": True, "output": "boxes"})


def submission_format(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.box_targets import box_submission\n"
        "from agentk.core.pixels import resolve\n"
        "from agentk.core.readers import read_table\n\n"
        f"ID_COLUMN = {task.id_column!r}\n"
        f"VALUE = {task.value_column!r}\n"
        f"SAMPLE = {task.sample!r}  # the pictures, in its order\n"
        f"EMPTY = {task.empty!r}  # a picture without boxes\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    predicted = {str(i).strip(): resolve(HERE, p) for i, p in zip(pred['id'], pred[VALUE])}\n"
        "    ids = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip().tolist()\n"
        "    return box_submission(predicted, ids, ID_COLUMN, VALUE, EMPTY)\n"
    )


def metric(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.box_targets import score_box_frames\n\n"
        f"METRIC = {facts.metric!r}\n"
        f"TARGET = {task.value_column!r}\n"
        f"THRESHOLDS = {task.thresholds!r}  # the IoU thresholds the page states, if any\n"
        f"HIGHER_IS_BETTER = {facts.metric_higher_is_better!r}\n\n\n"
        "def score(y_true: pd.DataFrame, y_pred: pd.DataFrame) -> float:\n"
        "    return score_box_frames(METRIC, y_true, y_pred, TARGET, HERE, THRESHOLDS)\n"
    )


def plan_steps(facts: DataFacts) -> list[str]:
    task = _task(facts)
    where = f"column {task.box_columns[0]!r}" if len(task.box_columns or []) == 1 else f"columns {task.box_columns} ({task.box_format})"
    return [
        f"Learn the boxes of the {task.n_train} pictures in {task.train_dir}/ from {task.table} ({where}), "
        f"gathered once per picture into setup/{GATHERED}/; predict the boxes of the {task.n_test} pictures in {task.test_dir}/.",
        "Key every map by the picture's file name; the target map holds the path of each picture's boxes.",
        f"Score with {facts.metric}; write one row per picture to {task.sample}: `conf x y w h ...`, most confident first.",
    ]
