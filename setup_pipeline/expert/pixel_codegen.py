"""Code the expert writes for an image-to-image task (`facts.pixels`): maps keyed by picture, a target
map of the target pictures' paths, an identity transform that tells the solver the target is a
picture, a submission that spells every predicted picture out pixel by pixel, and a per-pixel metric.
The conventions (paths relative to setup/, pixel ids, scales) live in `agentk.core.pixels`."""

from __future__ import annotations

from setup_pipeline.expert.facts import DataFacts
from setup_pipeline.expert.pixels import PixelTask


def _task(facts: DataFacts) -> PixelTask:
    assert facts.pixels is not None
    return facts.pixels


def _pictures(folder: str) -> str:
    """Lines that set `paths`: the folder's pictures, by file name."""
    return (f"    root = RAW / {folder!r}\n"
            "    paths = sorted((p for p in root.iterdir() if is_image(p)), key=lambda p: p.name)\n")


def image_map(facts: DataFacts, split: str) -> str:
    task = _task(facts)
    if split == "test":
        return ("def build_map() -> pd.DataFrame:\n" + _pictures(task.test_dir) +
                '    return pd.DataFrame({"id": [p.stem for p in paths], "image_path": [relative_to_setup(p) for p in paths]})\n')
    return ("def build_map() -> pd.DataFrame:\n" + _pictures(task.train_dir) +
            f"    targets = {{p.stem for p in (RAW / {task.target_dir!r}).iterdir()}}\n"
            "    paths = [p for p in paths if p.stem in targets]  # an input without its target teaches nothing\n"
            '    return pd.DataFrame({"id": [p.stem for p in paths], "image_path": [relative_to_setup(p) for p in paths]})\n')


def target_map(facts: DataFacts) -> str:
    task = _task(facts)
    return ("def build_map() -> pd.DataFrame:\n" + _pictures(task.target_dir) +
            f"    inputs = {{p.stem for p in (RAW / {task.train_dir!r}).iterdir()}}\n"
            "    paths = [p for p in paths if p.stem in inputs]\n"
            f'    return pd.DataFrame({{"id": [p.stem for p in paths], {task.value_column!r}: [relative_to_setup(p) for p in paths]}})\n')


def target_transform(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.pixels import PIXEL_TASK\n\n"
        f"TARGET = {task.value_column!r}\n"
        f"SCALE = {task.scale!r}  # submission value = stored intensity / SCALE\n\n\n"
        "def forward(df: pd.DataFrame) -> pd.DataFrame:\n"
        "    return df.copy()  # the target is a picture: its path stays as it is\n\n\n"
        "def inverse(df: pd.DataFrame) -> pd.DataFrame:\n"
        "    return df.copy()\n\n\n"
        "def target_info(df: pd.DataFrame) -> dict:\n"
        '    return {"targets": [{"column": TARGET, "task": PIXEL_TASK, "classes": None, "scale": SCALE}]}\n'
    )


def submission_format(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.pixels import read_picture, resolve, values_in_order\n"
        "from agentk.core.readers import read_table\n\n"
        f"ID_COLUMN = {task.id_column!r}\n"
        f"VALUE = {task.value_column!r}\n"
        f"SAMPLE = {task.sample!r}  # the rows, in its order: one per pixel\n"
        f"BASE = {task.base!r}  # the first row's and column's number\n"
        f"COLUMN_FIRST = {task.order == 'col_row'!r}\n"
        f"SCALE = {task.scale!r}\n"
        f"CLIP = {(0.0, 255.0 / task.scale)!r}\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    pictures = {str(i).strip(): read_picture(resolve(HERE, p), SCALE) for i, p in zip(pred['id'], pred[VALUE])}\n"
        "    ids = read_table(RAW / SAMPLE)[ID_COLUMN].str.strip()\n"
        "    values = np.clip(values_in_order(pictures, ids, BASE, COLUMN_FIRST), *CLIP)\n"
        "    return pd.DataFrame({ID_COLUMN: ids.to_numpy(), VALUE: values})\n"
    )


def metric(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.pixels import score_picture_frames\n\n"
        f"METRIC = {facts.metric!r}\n"
        f"TARGET = {task.value_column!r}\n"
        f"SCALE = {task.scale!r}\n"
        f"HIGHER_IS_BETTER = {facts.metric_higher_is_better!r}\n\n\n"
        "def score(y_true: pd.DataFrame, y_pred: pd.DataFrame) -> float:\n"
        "    return score_picture_frames(METRIC, y_true, y_pred, TARGET, HERE, SCALE)\n"
    )
