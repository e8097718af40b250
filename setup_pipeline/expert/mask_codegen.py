"""Code the expert writes for a segmentation task (`facts.masks`): maps keyed by picture, a target
map of labelled-mask paths (a table's run-length strings decoded once into setup/masks/), an
identity transform that tells the solver the target is a mask, a submission that encodes every
predicted mask as the sample does, and the page's mask metric. The conventions live in
`agentk.core.mask_targets`."""

from __future__ import annotations

from collections.abc import Callable

from setup_pipeline.expert.facts import DataFacts
from setup_pipeline.expert.mask_targets import MaskTask
from setup_pipeline.expert.pixel_codegen import kept_as_path, pictures

DECODED = "masks"  # setup/<DECODED>/<picture>.npz: the training masks a table encodes


def _task(facts: DataFacts) -> MaskTask:
    assert facts.masks is not None
    return facts.masks


def _table_strings(task: MaskTask) -> str:
    """Lines that set `strings`: each listed picture's encodings, by picture name (with classes,
    its (class number, encoding) pairs)."""
    if task.classes is not None:
        return _class_strings(task)
    return (
        "    from agentk.core.readers import read_table\n\n"
        f"    table = read_table(RAW / {task.table!r})\n"
        f"    names = table[{task.table_id!r}].astype(str).str.strip()\n"
        "    keys = names.where(~names.str.contains(r'\\.[A-Za-z]{3,4}$', regex=True), names.str.rsplit('.', n=1).str[0])\n"
        f"    strings = table[{task.table_value!r}].groupby(keys.to_numpy(), sort=False).agg(list).to_dict()\n")


def _class_strings(task: MaskTask) -> str:
    if task.table_class is None:
        split = (f"    parts = table[{task.table_id!r}].astype(str).str.strip().str.rpartition('_')\n"
                 "    names, labels = parts[0], parts[2]  # ids are <picture>_<class>\n")
    else:
        split = (f"    names = table[{task.table_id!r}].astype(str).str.strip()\n"
                 f"    labels = table[{task.table_class!r}]\n")
    return (
        "    from agentk.core.mask_targets import class_name\n"
        "    from agentk.core.readers import read_table\n\n"
        f"    table = read_table(RAW / {task.table!r})\n" + split +
        "    keys = names.where(~names.str.contains(r'\\.[A-Za-z]{3,4}$', regex=True), names.str.rsplit('.', n=1).str[0])\n"
        "    number = {c: k for k, c in enumerate(CLASSES, start=1)}\n"
        "    strings: dict[str, list] = {}\n"
        f"    for key, label, value in zip(keys, labels.map(class_name), table[{task.table_value!r}]):\n"
        "        strings.setdefault(key, []).append((number.get(label, 0), value))\n")


def _classes_line(task: MaskTask) -> str:
    return f"CLASSES = {task.classes!r}  # bit k - 1 of a mask holds the k-th class\n\n\n" if task.classes is not None else ""


def _labelled(task: MaskTask) -> str:
    """Lines that keep in `paths` the training pictures that have a target."""
    if task.source == "mask_files":
        return (f"    targets = {{p.stem for p in (RAW / {task.mask_dir!r}).iterdir()}}\n"
                "    paths = [p for p in paths if p.stem in targets]  # a picture without its mask teaches nothing\n")
    if task.missing_is_empty:
        return ""  # the table lists only pictures with a mask: every other picture has none
    return _table_strings(task) + "    paths = [p for p in paths if p.stem in strings]  # unlisted pictures are unlabelled\n"


def image_map(facts: DataFacts, split: str) -> str:
    return picture_map(_task(facts), split, _labelled)


def picture_map(task: MaskTask, split: str, labelled: Callable[[MaskTask], str]) -> str:
    """A split's pictures keyed by name; train keeps those `labelled` (lines that filter `paths`) names."""
    folder = task.test_dir if split == "test" else task.train_dir
    keep = "" if split == "test" else labelled(task)
    return (_classes_line(task) + "def build_map() -> pd.DataFrame:\n" + pictures(folder, by_content=False) + keep +
            '    return pd.DataFrame({"id": [p.stem for p in paths], "image_path": [relative_to_setup(p) for p in paths]})\n')


def target_map(facts: DataFacts) -> str:
    task = _task(facts)
    if task.source == "mask_files":
        return ("def build_map() -> pd.DataFrame:\n" + pictures(task.mask_dir or "", by_content=False) +
                f"    inputs = {{p.stem for p in (RAW / {task.train_dir!r}).iterdir()}}\n"
                "    paths = [p for p in paths if p.stem in inputs]\n"
                f'    return pd.DataFrame({{"id": [p.stem for p in paths], {task.value_column!r}: [relative_to_setup(p) for p in paths]}})\n')
    keep = "" if task.missing_is_empty else "    paths = [p for p in paths if p.stem in strings]\n"
    classes = task.classes is not None
    decode = ("class_labels(own, shape" if classes else "decoded_labels(own, shape") + f", {task.order!r}, {task.relative!r})"
    return (
        "from agentk.core.mask_targets import LABELS_SUFFIX, class_labels, decoded_labels, picture_shape, save_labels\n"
        "from agentk.core.masks import is_blank\n\n\n" + _classes_line(task) +
        "def build_map() -> pd.DataFrame:\n" + _table_strings(task) + pictures(task.train_dir, by_content=False) + keep +
        f"    folder = HERE / {DECODED!r}\n"
        "    ids, targets = [], []\n"
        "    for path in paths:\n"
        + ("        own = [(k, s) for k, s in strings.get(path.stem, []) if k and not is_blank(s)]\n" if classes else
           "        own = [s for s in strings.get(path.stem, []) if not is_blank(s)]\n") +
        "        shape = picture_shape(path)\n"
        "        # Decoded once here, so every reader of the target map reads a picture; pictures without\n"
        "        # a mask (most of them, in some competitions) share one empty mask of their size.\n"
        "        target = (folder / (path.stem + LABELS_SUFFIX)) if own else (folder / 'empty' / f'{shape[0]}x{shape[1]}{LABELS_SUFFIX}')\n"
        "        if own or not target.exists():\n"
        f"            save_labels({decode}, target)\n"
        "        ids.append(path.stem)\n"
        "        targets.append(relative_to_setup(target))\n"
        f"    return pd.DataFrame({{'id': ids, {task.value_column!r}: targets}})\n")


def target_transform(facts: DataFacts) -> str:
    task = _task(facts)
    # per_object: one submission row per object, else one per picture
    # mask_classes: one binary mask per class, bit k - 1 of a mask the k-th
    extra: dict[str, object] = {"per_object": task.per_object}
    if task.classes is not None:
        extra["mask_classes"] = task.classes
    return kept_as_path("agentk.core.mask_targets.MASK_TASK", task.value_column, "a mask", extra)


def submission_format(facts: DataFacts) -> str:
    task = _task(facts)
    if task.classes is not None:
        return _class_submission(task)
    return (
        "from agentk.core.mask_targets import mask_submission\n"
        "from agentk.core.pixels import resolve\n"
        "from agentk.core.readers import read_table\n\n"
        f"ID_COLUMN = {task.id_column!r}\n"
        f"VALUE = {task.value_column!r}\n"
        f"SAMPLE = {task.sample!r}  # the pictures, in its order\n"
        f"PER_OBJECT = {task.per_object!r}\n"
        f"ORDER = {task.order!r}  # 'F': pixels numbered top to bottom, then left to right\n"
        f"RELATIVE = {task.relative!r}\n"
        f"EMPTY = {task.empty!r}  # a picture without a mask, as the sample writes it\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    masks = {str(i).strip(): resolve(HERE, p) for i, p in zip(pred['id'], pred[VALUE])}\n"
        "    ids = read_table(RAW / SAMPLE)[ID_COLUMN].str.strip().tolist()\n"
        "    return mask_submission(masks, ids, ID_COLUMN, VALUE, PER_OBJECT, ORDER, RELATIVE, EMPTY)\n"
    )


def _class_submission(task: MaskTask) -> str:
    return (
        "from agentk.core.mask_targets import class_mask_submission\n"
        "from agentk.core.pixels import resolve\n"
        "from agentk.core.readers import read_table\n\n"
        f"ID_COLUMN = {task.id_column!r}  # " + ("<picture>_<class>" if task.sample_class is None else "the picture") + "\n"
        f"CLASS_COLUMN = {task.sample_class!r}\n"
        f"VALUE = {task.value_column!r}\n"
        f"SAMPLE = {task.sample!r}  # the (picture, class) rows, in its order\n"
        f"CLASSES = {task.classes!r}  # bit k - 1 of a mask holds the k-th class\n"
        f"ORDER = {task.order!r}  # 'F': pixels numbered top to bottom, then left to right\n"
        f"RELATIVE = {task.relative!r}\n"
        f"EMPTY = {task.empty!r}  # a pair without a mask, as the sample writes it\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    masks = {str(i).strip(): resolve(HERE, p) for i, p in zip(pred['id'], pred[VALUE])}\n"
        "    sample = read_table(RAW / SAMPLE)\n"
        "    return class_mask_submission(masks, sample, ID_COLUMN, VALUE, CLASS_COLUMN, CLASSES, ORDER, RELATIVE, EMPTY)\n"
    )


def metric(facts: DataFacts) -> str:
    task = _task(facts)
    return (
        "from agentk.core.mask_targets import score_mask_frames\n\n"
        f"METRIC = {facts.metric!r}\n"
        f"TARGET = {task.value_column!r}\n"
        f"PER_OBJECT = {task.per_object!r}\n"
        f"THRESHOLDS = {task.thresholds!r}  # the IoU thresholds the page states, if any\n"
        f"N_CLASSES = {len(task.classes or [])!r}  # > 0: scored over (picture, class) pairs\n"
        f"HIGHER_IS_BETTER = {facts.metric_higher_is_better!r}\n\n\n"
        "def score(y_true: pd.DataFrame, y_pred: pd.DataFrame) -> float:\n"
        "    return score_mask_frames(METRIC, y_true, y_pred, TARGET, HERE, PER_OBJECT, THRESHOLDS, N_CLASSES)\n"
    )


def plan_steps(facts: DataFacts) -> list[str]:
    task = _task(facts)
    source = (f"the masks in {task.mask_dir}/ by file name" if task.source == "mask_files" else
              f"the run-length strings of {task.table}, decoded once into setup/{DECODED}/")
    rows = "one row per object" if task.per_object else "one row per picture"
    if task.classes is not None:
        rows = f"one row per (picture, class) of {len(task.classes)} classes"
        source += f"; each class a bit of the mask ({', '.join(task.classes[:10])})"
    return [
        f"Learn the masks of the {task.n_train} pictures in {task.train_dir}/ from {source}; "
        f"predict the masks of the {task.n_test} pictures in {task.test_dir}/.",
        "Key every map by the picture's file name; the target map holds each labelled mask's path.",
        f"Score with {facts.metric}; write {rows} to {task.sample}, run-length encoded "
        f"({'column' if task.order == 'F' else 'row'}-major{', relative starts' if task.relative else ''}), "
        f"no mask as {task.empty or 'a blank cell'!r}.",
    ]
