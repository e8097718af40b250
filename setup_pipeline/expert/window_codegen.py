"""Code the expert writes for labelled windows of long recordings (`facts.windows`): audio maps of one
row per window (the recording's path and the window's `start_s`, `end_s`), training clips cut into
windows that carry their clip's class, and a submission of the sample's rows with a probability per
class (0 for a class no training clip carries). The convention lives in `agentk.core.sound_windows`;
the target transform and the metric are the ordinary ones of a class per row."""

from __future__ import annotations

from agentk.core.sound_windows import TRAIN_WINDOWS_PER_CLIP
from setup_pipeline.expert.facts import DataFacts
from setup_pipeline.perception.windows import WindowShape

_WINDOW_COLUMNS = '["id", "audio_path", START_COLUMN, END_COLUMN]'


def _shape(facts: DataFacts) -> WindowShape:
    assert facts.windows is not None
    return facts.windows


def _training_windows(shape: WindowShape) -> str:
    """Imports and the start of build_map(): `rows`, a row per training window with its label."""
    head = (
        "from agentk.core.readers import read_table\n"
        "from agentk.core.sound_files import is_audio\n"
        "from agentk.core.sound_windows import END_COLUMN, START_COLUMN, find_sound, labelled_windows, sound_index, "
        "table_spans\n\n"
        f"CLASSES = set({shape.trained_classes!r})\n"
        f"STEP = {shape.window_s!r}  # seconds per window\n\n\n"
        "def build_map() -> pd.DataFrame:\n"
        f"    root = RAW / {shape.train_dir!r}\n"
        "    clips = sorted(p for p in root.rglob('*') if is_audio(p))\n"
    )
    if shape.train_table is None:
        return head + (
            "    labelled = [(p, p.parent.name, None) for p in clips if p.parent.name in CLASSES]  # the folder is the class\n"
            "    rows = labelled_windows(labelled, STEP)\n"
        )
    return head + (
        f"    table = read_table(RAW / {shape.train_table!r})\n"
        "    index = sound_index(clips)\n"
        f"    # None: the row labels its whole clip; else the span of its recording it labels, in seconds.\n"
        f"    spans = table_spans(table, {shape.start_column!r}, {shape.end_column!r}, STEP, {shape.numbering!r})\n"
        f"    cells = zip(table[{shape.file_column!r}], table[{shape.label_column!r}].astype(str).str.strip(), spans)\n"
        "    labelled = [(find_sound(v, index), label, span) for v, label, span in cells if label in CLASSES]\n"
        "    rows = labelled_windows([row for row in labelled if row[0] is not None], STEP)\n"
    )


def audio_map(facts: DataFacts, split: str) -> str:
    shape = _shape(facts)
    if split == "train":
        return _training_windows(shape) + (
            '    rows["audio_path"] = [relative_to_setup(p) for p in rows["path"]]\n'
            f"    return rows[{_WINDOW_COLUMNS}]\n"
        )
    return (
        "from agentk.core.readers import read_table\n"
        "from agentk.core.sound_files import is_audio\n"
        "from agentk.core.sound_windows import END_COLUMN, START_COLUMN, sample_windows\n\n"
        f"SAMPLE = {shape.sample!r}  # a row per window: '<recording>_<{shape.numbering} second>'\n"
        f"ID_COLUMN = {shape.id_column!r}\n"
        f"STEP = {shape.window_s!r}  # seconds per window\n"
        f"NUMBERING = {shape.numbering!r}  # the number in a row id is the window's {shape.numbering} second\n\n\n"
        "def build_map() -> pd.DataFrame:\n"
        "    ids = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip()\n"
        f"    recordings = [p for p in (RAW / {shape.test_dir!r}).iterdir() if is_audio(p)]\n"
        "    rows = sample_windows(ids, recordings, STEP, NUMBERING)\n"
        '    rows["audio_path"] = [relative_to_setup(p) for p in rows["path"]]\n'
        f"    return rows[{_WINDOW_COLUMNS}]\n"
    )


def target_map(facts: DataFacts) -> str:
    label = facts.targets[0].column
    return _training_windows(_shape(facts)) + f'    return rows[["id", "label"]].rename(columns={{"label": {label!r}}})\n'


def submission_format(facts: DataFacts, sources: dict[str, str]) -> str:
    """`sources` maps each class column to its prediction-frame column (absent: no clip taught it)."""
    shape = _shape(facts)
    return (
        "from agentk.core.maps import id_text\n"
        "from agentk.core.readers import read_table\n\n"
        f"ID_COLUMN = {shape.id_column!r}\n"
        f"SOURCES = {sources!r}  # class column -> prediction frame column\n"
        f"SAMPLE = {shape.sample!r}  # the rows, in its order: one per window\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    out = pd.DataFrame({ID_COLUMN: id_text(pred['id'].astype(str)).to_numpy()})\n"
        "    for column, source in SOURCES.items():\n"
        "        # A class no training clip carries is never predicted present.\n"
        "        out[column] = pred[source].to_numpy(float) if source in pred.columns else 0.0\n"
        "    written = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip()\n"
        "    out = out.set_index(ID_COLUMN).loc[id_text(written).to_numpy()].reset_index()\n"
        "    out[ID_COLUMN] = written.to_numpy()  # the ids as the sample writes them\n"
        "    return out[[ID_COLUMN, *SOURCES]]\n"
    )


def plan_steps(facts: DataFacts) -> list[str]:
    shape = _shape(facts)
    how = (f"{shape.train_table} ({shape.file_column!r} -> {shape.label_column!r})" if shape.train_table
           else "the folder each clip sits in")
    return [
        f"{shape.describe()} ({shape.n_rows} rows in {shape.sample}, '<recording>_<{shape.numbering} second>').",
        f"Cut the {shape.n_train_clips} training clips under {shape.train_dir}/ into {shape.window_s}-second windows "
        f"(at most {TRAIN_WINDOWS_PER_CLIP} per clip), each labelled by its clip's class from {how}.",
        f"Key every map by window; score with {facts.metric}; write a probability per class for every row of "
        f"{shape.sample}, in its order.",
    ]
