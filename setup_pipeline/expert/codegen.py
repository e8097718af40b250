"""Code the expert policy writes into each template hole, from the facts its inspection found.

Every function returns Python source that defines what the stage's template calls. Values are
embedded with repr() so the generated files read on their own.
"""

from __future__ import annotations

from agentk.core.artifacts import TEXT_TASK
from setup_pipeline.expert import row_files
from setup_pipeline.expert.images import ImageLayout
from setup_pipeline.expert.facts import DataFacts

_KEY = '''
def _key(value) -> str:
    """Labels compare as text; 3.0 and 3 are the same class once a CSV round trip is involved."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()
'''


def _label_columns(facts: DataFacts) -> list[str]:
    return [t.column for t in facts.targets]


_IMPORTS = ("from agentk.core.maps import id_text\n"
            "from agentk.core.readers import read_table\n"
            "from setup_pipeline.perception.recipe import assemble\n\n\n")


_ROW = "__row"  # a stacked picture's number: the row's place in the table as read


def _read(facts: DataFacts, split: str, drop_missing_targets: bool, numbered: bool = False) -> str:
    """Lines that set `frame` (the split's table, cells as text) and `ids` (one per row); with
    `numbered`, frame[_ROW] keeps each row's place before rows without a target are dropped."""
    recipe = facts.train_table if split == "train" else facts.test_table
    assert recipe is not None
    id_column = facts.train_id_column if split == "train" else facts.test_id_column
    spec = recipe.model_dump(mode="json", exclude_defaults=True)
    lines = [f"    frame = assemble(RAW, {spec!r})"]
    if numbered:
        lines.append(f"    frame[{_ROW!r}] = range(len(frame))")
    if drop_missing_targets and partial_targets(facts):
        # Each target is learnt on the rows that have it: only a row without any teaches nothing.
        lines.append(f"    present = (frame[{_label_columns(facts)!r}].apply(lambda c: c.str.strip()) != '').any(axis=1)")
        lines.append("    frame = frame[present].reset_index(drop=True)  # rows without any target teach nothing")
    elif drop_missing_targets:
        lines.append(f"    present = (frame[{_label_columns(facts)!r}].apply(lambda c: c.str.strip()) != '').all(axis=1)")
        lines.append("    frame = frame[present].reset_index(drop=True)  # rows without a target teach nothing")
    if split == "train" and facts.train_ids_by_position:
        lines.append("    ids = pd.Series([f'train_{i}' for i in range(len(frame))], index=frame.index)  # the key repeats")
    elif id_column:
        lines.append(f"    ids = frame[{id_column!r}].astype(str).str.strip()")
    elif split == "test" and facts.sample_submission:
        lines += [f"    ids = read_table(RAW / {facts.sample_submission!r})[{facts.id_column!r}].astype(str).str.strip()",
                  "    if len(ids) != len(frame):",
                  "        raise ValueError(f'test has {len(frame)} rows but the sample {len(ids)}: rows cannot be matched by order')",
                  "    ids.index = frame.index  # test rows are the sample's rows, in order"]
    elif split == "test" and facts.test_row_id_start is not None:
        lines.append(f"    ids = pd.Series([str(i + {facts.test_row_id_start}) for i in range(len(frame))], index=frame.index)")
    else:
        lines.append(f"    ids = pd.Series([f'{split}_{{i}}' for i in range(len(frame))], index=frame.index)")
    return "\n".join(lines)


def partial_targets(facts: DataFacts) -> bool:
    """Several numeric targets, each kept where present (a row may lack some): the solver fits each
    on its own rows, so an incomplete row still teaches the targets it has."""
    return len(facts.targets) > 1 and all(t.task == "regression" for t in facts.targets)


def _split_file(facts: DataFacts, split: str) -> str | None:
    return facts.train_file if split == "train" else facts.test_file


def table_map(facts: DataFacts, split: str, columns: list[str], fill_text: bool) -> str:
    file = _split_file(facts, split)
    assert file is not None
    fill = '.fillna("").astype(str)' if fill_text else ""
    per_row = row_files.read_lines(facts.row_files, split) if fill_text and facts.row_files else ""
    # A key named `id` that is also a feature (timestamps) keeps its values under another name:
    # the map's own `id` column comes first.
    rename = '.rename(columns={"id": "id_value"})' if "id" in columns else ""
    return (
        _IMPORTS + "def build_map() -> pd.DataFrame:\n"
        f"{_read(facts, split, drop_missing_targets=split == 'train')}\n" + per_row +
        f"    out = frame[{columns!r}].copy(){fill}{rename}\n"
        '    out.insert(0, "id", ids.to_numpy())\n'
        "    return out.reset_index(drop=True)\n"
    )


def _is_file(layout: ImageLayout, var: str) -> str:
    """An expression true when the path `var` is one of the layout's files: pictures by extension or
    content (the template's is_image), sound clips by their first bytes (a clip may be named .bin)."""
    return f"is_audio({var})" if layout.media == "audio" else f"is_image({var})"


def _media_imports(layout: ImageLayout) -> str:
    return "from agentk.core.sound_files import is_audio\n\n\n" if layout.media == "audio" else ""


def _path_column(layout: ImageLayout) -> str:
    return "audio_path" if layout.media == "audio" else "image_path"


def _named_train_images(layout: ImageLayout) -> str:
    """Imports and the start of build_map(): `paths`, the train files whose names carry a label,
    `labels`, each one's label, and `ids`, their numbers in name order: a key spelling the label
    (`cat.0`) would hand it to whatever reads ids, as the solver's id-prefix groups do."""
    return (
        "import re\n\n\n"
        "def build_map() -> pd.DataFrame:\n"
        f"    root = RAW / {layout.train_dir!r}\n"
        f"    pattern = re.compile({layout.name_label_pattern!r})  # group 'label' of the file stem\n"
        f"    found = sorted((p, pattern.match(p.stem)) for p in root.iterdir() if {_is_file(layout, 'p')})\n"
        "    paths = [p for p, match in found if match]  # a stray name without a label teaches nothing\n"
        "    labels = [match.group('label') for _, match in found if match]\n"
        "    ids = [f'train_{i}' for i in range(len(paths))]\n"
    )


def _stacked_map(facts: DataFacts, split: str, folder: str) -> str:
    """Pictures unpacked from a stacked array: row i of the split's table (or of the sample, when
    the test split has no table) is `<folder>/<i>.npy`."""
    if _split_file(facts, split) is None:
        assert facts.sample_submission is not None
        return (
            _IMPORTS + "def build_map() -> pd.DataFrame:\n"
            f"    ids = read_table(RAW / {facts.sample_submission!r})[{facts.id_column!r}].astype(str).str.strip()\n"
            f"    root = RAW / {folder!r}\n"
            "    paths = [root / f'{i}.npy' for i in range(len(ids))]\n"
            '    return pd.DataFrame({"id": ids.to_numpy(), "image_path": [relative_to_setup(p) for p in paths]})\n'
        )
    return (
        _IMPORTS + "def build_map() -> pd.DataFrame:\n"
        f"{_read(facts, split, drop_missing_targets=split == 'train', numbered=True)}\n"
        f"    root = RAW / {folder!r}\n"
        f"    paths = [root / f'{{i}}.npy' for i in frame[{_ROW!r}]]\n"
        '    return pd.DataFrame({"id": ids.to_numpy(), "image_path": [relative_to_setup(p) for p in paths]})\n'
    )


def image_map(facts: DataFacts, split: str) -> str:
    layout = facts.image
    assert layout is not None
    if split in layout.stack_dirs:
        return _stacked_map(facts, split, layout.stack_dirs[split])
    return media_map(facts, split, layout)


def audio_map(facts: DataFacts, split: str) -> str:
    assert facts.audio is not None
    return media_map(facts, split, facts.audio)


def media_map(facts: DataFacts, split: str, layout: ImageLayout) -> str:
    """The split's map of one file per example: `id` and the file's path (`image_path` or `audio_path`)."""
    return _media_imports(layout) + _media_map(facts, split, layout)


def _media_map(facts: DataFacts, split: str, layout: ImageLayout) -> str:
    column, is_file = _path_column(layout), _is_file(layout, "p")
    if layout.kind == "name_labels" and split == "train":
        return _named_train_images(layout) + (
            f'    return pd.DataFrame({{"id": ids, {column!r}: [relative_to_setup(p) for p in paths]}})\n'
        )
    if layout.kind == "class_folders" and split == "train":
        return (
            "def build_map() -> pd.DataFrame:\n"
            f"    root = RAW / {layout.train_dir!r}\n"
            f"    paths = sorted(p for p in root.glob('*/*') if {is_file})\n"
            f'    return pd.DataFrame({{"id": [p.stem for p in paths], {column!r}: [relative_to_setup(p) for p in paths]}})\n'
        )
    if split == "test" and _split_file(facts, split) is None and facts.sample_submission:
        # The sample lists the test files: look each one up, wherever under the folder it sits.
        folder = layout.test_dir or layout.image_dir
        return (
            _IMPORTS + "def build_map() -> pd.DataFrame:\n"
            f"    ids = read_table(RAW / {facts.sample_submission!r})[{facts.id_column!r}].astype(str).str.strip()\n"
            f"    root = RAW / {folder!r}\n" + _image_lookup(layout)
        )
    if layout.kind == "class_folders" or _split_file(facts, split) is None:
        folder = (layout.test_dir if split == "test" else layout.train_dir) or layout.image_dir
        spelling = "p.name" if layout.ids_include_extension else "p.parent.name" if layout.ids_are_folders else "p.stem"
        return (
            "def build_map() -> pd.DataFrame:\n"
            f"    root = RAW / {folder!r}\n"
            f"    paths = sorted(p for p in root.rglob('*') if {is_file})\n"
            f'    return pd.DataFrame({{"id": [{spelling} for p in paths], {column!r}: [relative_to_setup(p) for p in paths]}})\n'
        )
    if layout.path_column and layout.path_stems:
        return (
            _IMPORTS + "def build_map() -> pd.DataFrame:\n"
            f"{_read(facts, split, drop_missing_targets=split == 'train')}\n"
            f"    root = RAW / {(layout.path_base or '.')!r}\n"
            f"    names = frame[{layout.path_column!r}].astype(str).str.strip()  # each file's name without extension\n"
            + _image_lookup(layout, "names")
        )
    if layout.path_column:
        return (
            _IMPORTS + "def build_map() -> pd.DataFrame:\n"
            f"{_read(facts, split, drop_missing_targets=split == 'train')}\n"
            f"    root = RAW / {(layout.path_base or '.')!r}\n"
            f"    paths = [root / str(value).strip() for value in frame[{layout.path_column!r}]]\n"
            f'    return pd.DataFrame({{"id": ids.to_numpy(), {column!r}: [relative_to_setup(p) for p in paths]}})\n'
        )
    folder = layout.image_dir or (layout.train_dir if split == "train" else layout.test_dir)
    return (
        _IMPORTS + "def build_map() -> pd.DataFrame:\n"
        f"{_read(facts, split, drop_missing_targets=split == 'train')}\n"
        f"    root = RAW / {folder!r}\n" + _image_lookup(layout)
    )


def _image_lookup(layout: ImageLayout, names: str = "ids") -> str:
    """Lines that find the file of every id in `ids` (or every name in `names`) under `root` (by file
    name, stem or folder)."""
    return (
        "    by_name = {}\n"
        "    for path in root.rglob('*'):\n"
        f"        if {_is_file(layout, 'path')}:\n"
        "            by_name.setdefault(path.name, path)\n"
        "            by_name.setdefault(path.stem, path)\n"
        + ("            by_name.setdefault(path.parent.name, path)\n" if layout.ids_are_folders else "") +
        f"    missing = [i for i in {names} if i not in by_name and Path(i).name not in by_name]\n"
        "    if missing:\n"
        f"        raise FileNotFoundError(f'{{len(missing)}} ids have no {layout.media} file under {{root}}, e.g. {{missing[:3]}}')\n"
        f"    paths = [by_name.get(i) or by_name[Path(i).name] for i in {names}]\n"
        f'    return pd.DataFrame({{"id": ids.to_numpy(), {_path_column(layout)!r}: [relative_to_setup(p) for p in paths]}})\n'
    )


def target_map(facts: DataFacts) -> str:
    labels = _label_columns(facts)
    layout = facts.image or facts.audio
    if layout is not None and layout.kind == "name_labels":
        return _media_imports(layout) + _named_train_images(layout) + (
            f'    return pd.DataFrame({{"id": ids, {labels[0]!r}: labels}})\n'
        )
    if layout is not None and layout.kind == "class_folders":
        return (
            _media_imports(layout) + "def build_map() -> pd.DataFrame:\n"
            f"    root = RAW / {layout.train_dir!r}\n"
            f"    paths = sorted(p for p in root.glob('*/*') if {_is_file(layout, 'p')})\n"
            f'    return pd.DataFrame({{"id": [p.stem for p in paths], {labels[0]!r}: [p.parent.name for p in paths]}})\n'
        )
    assert facts.train_file is not None
    return (
        _IMPORTS + "def build_map() -> pd.DataFrame:\n"
        f"{_read(facts, 'train', drop_missing_targets=True)}\n"
        f"    out = frame[{labels!r}].copy()\n"
        '    out.insert(0, "id", ids.to_numpy())\n'
        "    return out.reset_index(drop=True)\n"
    )


def target_transform(facts: DataFacts, classes: dict[str, list], scales: dict[str, str]) -> str:
    """`classes` holds the labels as read back from the target map (their CSV types); `scales`
    the regression rescaling chosen for the metric ("log1p" or "log")."""
    tasks = {t.column: t.task for t in facts.targets}
    sources = {t.column: t.source_column for t in facts.targets if t.task == TEXT_TASK}
    bounds = {t.column: list(t.bounds) for t in facts.targets if t.bounds is not None}
    return (
        f"TASKS = {tasks!r}\n"
        f"TEXT_SOURCES = {sources!r}  # a text target -> the input column it rewrites\n"
        f"CLASSES = {classes!r}\n"
        f"SCALES = {scales!r}\n"
        f"BOUNDS = {bounds!r}  # coordinates on a fixed-size picture: predictions stay in the range seen\n"
        f"{_KEY}\n"
        "def forward(df: pd.DataFrame) -> pd.DataFrame:\n"
        "    out = df.copy()\n"
        "    for column in TASKS:\n"
        f"        if TASKS[column] == {TEXT_TASK!r}:\n"
        "            continue  # a text target is learnt as text\n"
        "        if column in CLASSES:\n"
        "            index = {_key(label): i for i, label in enumerate(CLASSES[column])}\n"
        "            codes = out[column].map(_key).map(index)\n"
        "            if codes.isna().any():\n"
        "                raise ValueError(f'{column}: labels outside the known classes: {sorted(set(out[column][codes.isna()].map(_key)))[:5]}')\n"
        "            out[column] = codes.astype(int)\n"
        "        elif SCALES.get(column) == 'log1p':\n"
        "            out[column] = np.log1p(out[column].astype(float).clip(lower=0))\n"
        "        elif SCALES.get(column) == 'log':\n"
        "            out[column] = np.log(out[column].astype(float).clip(lower=1e-12))\n"
        "        else:\n"
        "            out[column] = out[column].astype(float)\n"
        "    return out\n\n\n"
        "def inverse(df: pd.DataFrame) -> pd.DataFrame:\n"
        "    out = df.copy()\n"
        "    for column in TASKS:\n"
        f"        if TASKS[column] == {TEXT_TASK!r}:\n"
        "            continue\n"
        "        if column in CLASSES:\n"
        "            labels = CLASSES[column]\n"
        "            out[column] = [labels[int(round(float(i)))] for i in out[column]]\n"
        "        elif SCALES.get(column) == 'log1p':\n"
        "            out[column] = np.expm1(out[column].astype(float))\n"
        "        elif SCALES.get(column) == 'log':\n"
        "            out[column] = np.exp(out[column].astype(float))\n"
        "        if column in BOUNDS:\n"
        "            out[column] = out[column].astype(float).clip(*BOUNDS[column])\n"
        "    return out\n\n\n"
        "def target_info(df: pd.DataFrame) -> dict:\n"
        '    return {"targets": [{"column": c, "task": TASKS[c], "classes": CLASSES.get(c),\n'
        '                         **({"source": TEXT_SOURCES[c]} if c in TEXT_SOURCES else {})} for c in TASKS]}\n'
    )


TOP_K_MARK = "__top"  # a source "<target>__top3" is the 3 likeliest labels, space-separated


def submission_format(facts: DataFacts, sources: dict[str, str]) -> str:
    """`sources` maps each predicted submission column to its prediction-frame column; echoed
    columns are copied from the test table; rows and columns follow the sample when there is one."""
    sample = facts.sample_submission
    lines = [
        _IMPORTS.rstrip("\n"),
        "",
        f"ID_COLUMN = {facts.id_column!r}",
        f"SOURCES = {sources!r}  # submission column -> prediction frame column",
        f"ECHO = {facts.echo_columns!r}  # submission column -> the test column it repeats",
        f"COLUMNS = {facts.submission_columns!r}",
        f"SAMPLE = {sample!r}  # rows follow the sample's order when there is one",
        "",
        "",
    ]
    if facts.echo_columns:
        lines += [
            "def _echoed() -> pd.DataFrame:",
            _read(facts, "test", drop_missing_targets=False),
            "    out = pd.DataFrame({ID_COLUMN: ids.to_numpy()})",
            "    for column, source in ECHO.items():",
            "        out[column] = frame[source].to_numpy()",
            "    return out.drop_duplicates(ID_COLUMN)",
            "",
            "",
        ]
    lines += [
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:",
        "    out = pd.DataFrame({ID_COLUMN: id_text(pred['id'].astype(str)).to_numpy()})",
        "    for column, source in SOURCES.items():",
        f"        target, _, k = source.rpartition({TOP_K_MARK!r})",
        "        if target and k.isdigit():  # a ranked list of labels, likeliest first",
        "            proba = [c for c in pred.columns if c.startswith(target + '__proba__')]",
        "            labels = np.array([c[len(target) + 9:] for c in proba], dtype=object)",
        "            order = np.argsort(-pred[proba].to_numpy(float), axis=1, kind='stable')[:, :int(k)]",
        "            out[column] = [' '.join(labels[row]) for row in order]",
        "        else:",
        "            out[column] = pred[source].to_numpy()",
    ]
    if facts.echo_columns:
        lines.append("    out = out.merge(_echoed(), on=ID_COLUMN, how='left')")
    lines += [
        "    if SAMPLE:",
        "        written = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip()",
        "        out = out.set_index(ID_COLUMN).loc[id_text(written).to_numpy()].reset_index()",
        "        out[ID_COLUMN] = written.to_numpy()  # the ids as the sample writes them",
        "    return out[[c for c in COLUMNS if c in out.columns]]",
    ]
    return "\n".join(lines) + "\n"


def metric(facts: DataFacts) -> str:
    # A long submission through a lookup scores every listed (row, target) cell together.
    return (
        "from agentk.core.metrics import score_prediction_frame\n\n"
        f"METRIC = {facts.metric!r}\n"
        f"TARGETS = {_label_columns(facts)!r}\n"
        f"POOLED = {facts.lookup is not None!r}  # the targets' cells scored together, not target by target\n"
        f"HIGHER_IS_BETTER = {facts.metric_higher_is_better!r}\n\n\n"
        "def score(y_true: pd.DataFrame, y_pred: pd.DataFrame) -> float:\n"
        "    return score_prediction_frame(METRIC, y_true, y_pred, TARGETS, pooled=POOLED)\n"
    )
