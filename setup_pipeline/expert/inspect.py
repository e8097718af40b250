"""Work out every fact the setup stages need from the agent's view of a competition.

Only `raw/description.md` and `raw/data/` are read, never grading facts. Cells are read as the
text in the file (like the sources do), so labels keep their spelling (`TRUE`, `EAP`, `7`);
numbers are parsed only to judge what a column is.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentk.core import metrics
from agentk.core.artifacts import TEXT_TASK
from agentk.core.mask_targets import MASK_TASK
from agentk.core.metrics.spatial import stated_thresholds
from agentk.core.pixels import PIXEL_TASK
from setup_pipeline.expert.description import submission_example_rows, submission_header
from setup_pipeline.expert.facts import DataFacts, ExpertDeclined, TargetFact
from setup_pipeline.expert.box_targets import box_metric, find_box_task
from setup_pipeline.expert.images import ImageLayout, ImageLayouts, present
from setup_pipeline.expert.mask_targets import MaskTask, find_mask_task, mask_metric
from setup_pipeline.expert.name_labels import NameLabels
from setup_pipeline.expert.pixels import PixelTask, find_pixel_task
from setup_pipeline.expert.row_files import RowFiles, find_row_files
from setup_pipeline.expert.targets import NA_WORDS, TargetDecisions, as_numbers, is_bool_like, sorted_labels
from setup_pipeline.perception.catalogue import Catalogue, build_catalogue
from setup_pipeline.perception.column_profile import column_profiles, constant_columns
from setup_pipeline.perception.clips import describe_clips, pictures_of_clips
from setup_pipeline.perception.page_text import as_markdown
from setup_pipeline.perception.roles import decide_roles
from setup_pipeline.perception.series import SeriesShape, find_series
from setup_pipeline.perception.stacks import PictureStack
from setup_pipeline.perception.windows import WindowShape, find_windows
from setup_pipeline.perception.tables import match_column


def _longest_cell(series: pd.Series) -> int:
    """Characters in the column's longest cell, as written (stripping only shortens cells)."""
    cells = series if isinstance(series.dtype, pd.StringDtype) else series.astype(str)
    longest = pc.max(pc.utf8_length(pa.array(cells))).as_py()
    return int(longest or 0)


@functools.cache
def _whitespace_class() -> str:
    """Every character str.split() splits on, so a count of them bounds the words it finds."""
    return "[" + "".join(c for c in map(chr, range(0x110000)) if c.isspace()) + "]"


def inspect_competition(raw_dir: Path, checkpoint: Callable[[str], None] | None = None) -> DataFacts:
    """All facts about the competition in `raw_dir`, or ExpertDeclined saying what is missing.
    `checkpoint(step)` is called before each long step (reading each table, deciding the tables'
    roles, the features, the series) and may raise to stop the inspection there."""
    return _Inspection(Path(raw_dir), checkpoint or (lambda step: None)).run()


class _Inspection(TargetDecisions, ImageLayouts):
    """One inspection; state is kept on the instance so each step stays a short method."""

    def __init__(self, raw_dir: Path, checkpoint: Callable[[str], None]) -> None:
        self.raw, self.data = raw_dir, raw_dir / "data"
        self.checkpoint = checkpoint
        self.notes: list[str] = []
        self.dropped: dict[str, str] = {}
        self.metric_override: str | None = None
        self.page_metric_unsupported: str | None = None  # a metric the page names that I cannot compute
        self.assumptions: list[str] = []
        self.evidence: dict[str, str] = {}
        self.test_row_start: int | None = None
        self.train_ids_by_position = False
        self.name_labels: NameLabels | None = None
        self.stacks: list[PictureStack] = []

    # ------------------------------------------------------------ files

    def assume(self, line: str) -> None:
        """A decision the files and page do not settle: the run goes on with it and says so."""
        self.assumptions.append(line)
        self.notes.append(f"assumed {line}")

    def run(self) -> DataFacts:
        desc_path = self.raw / "description.md"
        text = as_markdown(desc_path.read_text(encoding="utf-8", errors="replace") if desc_path.is_file() else "")
        guess = metrics.infer_metric(text)
        base_metric = guess.name
        found_k = re.search(r"@\s*(\d{1,2})\b", guess.evidence or "")
        self.top_k = int(found_k.group(1)) if found_k else None
        if guess.name:
            self.evidence["metric"] = f"{guess.name} ({guess.source}, confidence {guess.confidence:.2f}): {guess.evidence}"
        self.page_metric_unsupported = guess.unsupported
        if guess.unsupported:
            self.notes.append(f"the page names a metric I cannot compute ({guess.unsupported!r}): "
                              "a metric is assumed from the data instead")
        if not self.data.is_dir():
            raise ExpertDeclined("there is no data/ folder next to the description")
        catalogue = build_catalogue(self.raw, self.checkpoint)
        self.notes += catalogue.notes
        self.images = catalogue.images
        self.stacks = catalogue.stacks
        if catalogue.audio and (not catalogue.images or pictures_of_clips(catalogue.images, catalogue.audio)):
            # Sound clips, one per example, are laid out like images: the same rules find them.
            if catalogue.images:
                self.notes.append(f"{len(catalogue.images)} picture(s) are named as the clips (their spectrograms): "
                                  "the clips are read instead")
            self.images, self.media = catalogue.audio, "audio"
            self.notes.append(describe_clips(catalogue.audio, self.data))
        elif catalogue.audio:
            self.notes.append(f"{len(catalogue.audio)} sound clip(s) beside the images are not used: "
                              "images and sound together are not supported")
        windows = find_windows(self.raw, catalogue.audio, catalogue.tables, self.notes) if self.media == "audio" else None
        if windows is not None:
            return self._window_facts(windows, base_metric)
        pixels = find_pixel_task(self.raw, catalogue.images, catalogue.tables, self.notes)
        if pixels is not None:
            return self._pixel_facts(pixels, base_metric)
        masks = find_mask_task(self.raw, catalogue.images, catalogue.tables, text, self.notes)
        if masks is None:
            thresholds = list(stated_thresholds(text) or []) or None
            masks = find_box_task(self.raw, catalogue.images, catalogue.tables, base_metric, thresholds, self.notes)
        if masks is not None:
            return self._mask_facts(masks, base_metric)
        if base_metric is not None and metrics.get_metric(base_metric).spatial:
            # Only segmentation tasks laid out as `mask_targets` reads them predict masks; other
            # solvers predict table cells: a metric is assumed from the data, and the notes say why.
            self.notes.append(f"the page's metric {base_metric} scores {metrics.get_metric(base_metric).kind} "
                              "strings per image, which the expert's solvers cannot predict: "
                              "a metric is assumed from the data instead")
            base_metric = None
        self.page = text
        described = submission_header(text)
        self.example_rows = submission_example_rows(text, described) if described else []
        self.checkpoint("deciding the tables' roles")
        roles = decide_roles(catalogue, described, self.example_rows, text)
        self.checkpoint("the ids and targets")
        self.roles = roles
        self.notes += roles.evidence
        self.train_df = roles.train_frame
        self.test_df = roles.test_frame
        self.sample_df = roles.sample_frame
        self.class_root = self._class_root()
        self.name_labels = self._name_labels() if roles.train is None and self.class_root is None else None
        if roles.train is None and self.class_root is None and self.name_labels is None:
            raise ExpertDeclined(f"no training data: no table holds answers for the test rows, no folder of "
                                 f"per-class {self.media} folders and no train {self.media} files named by their class "
                                 f"({catalogue.summary()})")
        self.train_path = self.raw / roles.train.files[0] if roles.train else None
        header = self._header(described)
        if header is None and self.train_df is None:
            header = self._class_folder_header(base_metric)
        id_column, train_id, test_id = self._ids(header)
        image = self._image_layout(id_column, train_id, test_id)
        if self.test_df is None and (image is None or not image.n_test_images):
            raise ExpertDeclined(f"no test data: no table of rows to predict and no folder of test {self.media} files")
        audio = None
        if image is not None and self.media == "audio":
            image, audio = None, image.model_copy(update={"media": "audio"})
        echo = {c: s for c, s in roles.echo.items() if header and c in header}
        # The key first, then what is predicted: the submission may order them otherwise.
        pred_header = [id_column, *(c for c in header if c not in echo and c != id_column)] if header else header
        fmt, targets, columns = self._targets(pred_header, id_column, train_id, test_id)
        if header and pred_header != header and fmt == "per_target":
            columns = header
        if base_metric is None and self.page_metric_unsupported:
            base_metric = self._default_metric(
                fmt, targets, f"the page's metric ({self.page_metric_unsupported}) is not one I can compute")
        elif base_metric is None:
            base_metric = self._default_metric(fmt, targets)
        elif metrics.get_metric(base_metric).kind == "ranking" and (len(targets) > 1 or fmt == "per_class_proba"):
            # Per-row label lists need one prediction column; several columns are scored one by one.
            # Label ranking over one score column per label: each column's ranking, i.e. its AUC.
            per_column = {"mean_f1": "f1", "mean_f2": "f1", "lrap": "auc"}.get(base_metric, "accuracy")
            self.assume(f"metric: {per_column} per column — the page's {base_metric} scores label "
                        f"lists, but the submission has {len(columns) - 1} prediction columns")
            base_metric = per_column
        targets = [self._fit_task(t, base_metric, fmt) for t in targets]
        base_metric = self.metric_override or base_metric
        if any(t.task == TEXT_TASK for t in targets) and metrics.get_metric(base_metric).name == "accuracy":
            # A text's accuracy compares it exactly: "1.0" is not "1", "The" is not "the".
            self.notes.append("metric: token_accuracy, the page's accuracy over texts compared exactly")
            base_metric = "token_accuracy"
        targets = [self._positive_class(t, base_metric, fmt) for t in targets]
        targets = self._coordinates(targets, image)
        if roles.lookup is not None and self.sample_df is not None:
            columns = list(self.sample_df.columns)  # the long submission the lookup maps into
        self._name_target_kinds(targets, base_metric)
        n_classes = max((len(t.classes) for t in targets if t.classes), default=None)
        metric = metrics.for_task(base_metric, n_classes)
        self.checkpoint("the features")
        tabular, text_cols = self._features(train_id, test_id, [t.column for t in targets], image)
        row_files = self._row_files(catalogue, id_column, train_id, test_id)
        if row_files is not None:
            text_cols.append(row_files.column)
        self.checkpoint("looking for series")
        series = self._series(catalogue, tabular)
        modalities = [m for m, on in (("tabular", tabular), ("text", text_cols), ("image", image), ("audio", audio)) if on]
        if not modalities:
            raise ExpertDeclined("no input features: train and test share no columns besides the id and no images "
                                 "or sound clips were found")
        return DataFacts(
            train_file=roles.train.files[0] if roles.train else None,
            test_file=roles.test.files[0] if roles.test else None,
            train_table=roles.train, test_table=roles.test,
            sample_submission=roles.sample,
            id_column=id_column, train_id_column=train_id, test_id_column=test_id,
            train_ids_by_position=self.train_ids_by_position,
            echo_columns=echo, test_row_id_start=self.test_row_start, top_k=self.top_k, row_files=row_files,
            submission_format=fmt, targets=targets, submission_columns=columns, lookup=roles.lookup,
            tabular_columns=tabular, text_columns=text_cols, image=image, audio=audio,
            input_modalities=modalities,  # type: ignore[arg-type]
            metric=metric, metric_higher_is_better=bool(metrics.get_metric(metric).higher_is_better),
            dropped_columns=self.dropped, notes=self.notes, series=series,
            assumptions=self.assumptions, evidence={**self.evidence, "tables": "; ".join(roles.evidence)},
        )

    def _pixel_facts(self, task: PixelTask, metric: str | None) -> DataFacts:
        """An image-to-image task: maps keyed by picture, the target a picture scored pixel by pixel."""
        if metric is None or metrics.get_metric(metric).kind != "value":
            self.assume(f"metric: rmse over pixels — the page names {metric or 'no metric'}, and a picture's "
                        "pixels are values")
            metric = "rmse"
        layout = ImageLayout(kind="id_files", train_dir=task.train_dir, test_dir=task.test_dir,
                             extension=Counter(p.suffix.lower() for p in self.images).most_common(1)[0][0],
                             n_train_images=task.n_pairs, n_test_images=task.n_test)
        return DataFacts(
            train_file=None, test_file=None, sample_submission=task.sample, id_column=task.id_column,
            train_id_column=None, test_id_column=None, submission_format="per_pixel",
            targets=[TargetFact(column=task.value_column, task=PIXEL_TASK)],
            submission_columns=[task.id_column, task.value_column], tabular_columns=[], text_columns=[],
            image=layout, pixels=task, input_modalities=["image"], metric=metric,
            metric_higher_is_better=bool(metrics.get_metric(metric).higher_is_better),
            dropped_columns={}, notes=self.notes, assumptions=self.assumptions, evidence=self.evidence)

    def _mask_facts(self, task: MaskTask, page_metric: str | None) -> DataFacts:
        """A segmentation or detection task: maps keyed by picture, the target a labelled mask (or
        boxes), submitted encoded."""
        metric, assumed = box_metric(page_metric) if task.output == "boxes" else mask_metric(task, page_metric)
        if assumed:
            self.assume(assumed)
        layout = ImageLayout(kind="id_files", train_dir=task.train_dir, test_dir=task.test_dir,
                             extension=Counter(p.suffix.lower() for p in self.images).most_common(1)[0][0],
                             n_train_images=task.n_train, n_test_images=task.n_test)
        return DataFacts(
            train_file=task.table, test_file=None, sample_submission=task.sample, id_column=task.id_column,
            train_id_column=None, test_id_column=None,
            submission_format="per_box" if task.output == "boxes" else "per_mask",
            targets=[TargetFact(column=task.value_column, task=MASK_TASK)],
            submission_columns=[task.id_column, task.value_column], tabular_columns=[], text_columns=[],
            image=layout, masks=task, input_modalities=["image"], metric=metric,
            metric_higher_is_better=bool(metrics.get_metric(metric).higher_is_better),
            dropped_columns={}, notes=self.notes, assumptions=self.assumptions, evidence=self.evidence)

    def _window_facts(self, shape: WindowShape, metric: str | None) -> DataFacts:
        """Windows of long recordings: a row per window in every map, the clip's class its target,
        a probability per class and window submitted in the sample's rows."""
        if metric is None or metrics.get_metric(metric).kind != "proba":
            self.assume(f"metric: auc per class column, averaged — the page names {metric or 'no metric'}, "
                        "and the sample holds a probability per class")
            metric = "auc"
        trained = shape.trained_classes
        layout = ImageLayout(kind="class_folders" if shape.train_table is None else "id_files", media="audio",
                             train_dir=shape.train_dir, test_dir=shape.test_dir,
                             extension=Counter(p.suffix.lower() for p in self.images).most_common(1)[0][0],
                             n_train_images=shape.n_train_clips, n_test_images=shape.n_recordings)
        target = TargetFact(column=shape.label_column or "label", task="multiclass" if len(trained) > 2 else "binary",
                            classes=trained)
        metric = metrics.for_task(metric, len(trained))
        return DataFacts(
            train_file=shape.train_table, test_file=None, sample_submission=shape.sample, id_column=shape.id_column,
            train_id_column=None, test_id_column=None, submission_format="per_class_proba", targets=[target],
            submission_columns=[shape.id_column, *shape.classes], tabular_columns=[], text_columns=[],
            image=None, audio=layout, windows=shape, input_modalities=["audio"], metric=metric,
            metric_higher_is_better=bool(metrics.get_metric(metric).higher_is_better),
            dropped_columns={}, notes=self.notes, assumptions=self.assumptions, evidence=self.evidence)

    def _name_target_kinds(self, targets: list[TargetFact], metric: str) -> None:
        """What the plan should say about the targets' kind: several labels per row, and labels
        spelled like missing values (read as the words they are)."""
        binary = [t.column for t in targets if t.task == "binary"]
        if len(binary) > 1 and len(binary) == len(targets):
            averaged = "mean column-wise " + metric if metrics.get_metric(metric).kind == "proba" else metric + " per column, averaged"
            if self.roles.lookup is not None:  # a long submission: its rows' cells are scored together
                averaged = f"{metric} over every (row, label) cell of the submission together"
            self.notes.append(f"several labels per row: {len(binary)} binary targets ({', '.join(binary[:8])}"
                              f"{', ...' if len(binary) > 8 else ''}), one model per label over one shared featurisation; "
                              f"scored by the {averaged}")
        words = sorted({c for t in targets for c in t.classes or [] if c.strip().lower() in NA_WORDS})
        if words:
            self.notes.append(f"labels {', '.join(map(repr, words))} are words like the other labels, never missing values")

    # ------------------------------------------------------------ submission header and ids

    def _header(self, described: list[str] | None) -> list[str] | None:
        """The submission's columns: the sample's header, else the page's example (`described`)."""
        if self.roles.lookup is not None:
            return self.roles.header  # wide: the test key, then the targets the lookup names
        if self.sample_df is None:
            return described
        header = list(self.sample_df.columns)
        if described:
            named = [c for c in described if c != "..."]
            agrees = header[: len(named)] == named if "..." in described else header == named
            if not agrees:
                self.notes.append(f"the description's submission example ({','.join(described)}) differs "
                                  f"from the sample file's header ({','.join(header[:8])}...); using the sample")
        return header

    def _class_folder_header(self, metric: str | None) -> list[str]:
        """Images labelled by their folders or names, with neither a sample nor an example: an id
        (the file stem) and what the metric scores, one probability per class or the label itself."""
        classes = sorted_labels(sorted(set(self._labels(""))))
        proba = metric is not None and metrics.get_metric(metric).kind == "proba"
        header = ["id", *classes] if proba else ["id", "label"]
        self.assume(f"submission: no sample nor example; columns {','.join(header[:4])}"
                    f"{',...' if len(header) > 4 else ''}: the {self.media} file name without extension as 'id', then "
                    + ("one probability per class, as the page's metric scores probabilities" if proba
                       else "the predicted class"))
        return header

    def _ids(self, header: list[str] | None) -> tuple[str, str | None, str | None]:
        roles = self.roles
        test_cols = list(self.test_df.columns) if self.test_df is not None else []
        train_cols = list(self.train_df.columns) if self.train_df is not None else []
        id_column, test_id = roles.key, roles.test_key
        if header and id_column not in header:
            id_column = header[0]
        if id_column is None and self.test_df is not None:
            unique = [c for c in test_cols if self.test_df[c].is_unique]
            exact = [c for c in unique if c.lower() == "id"]
            # "passenger_id", "PassengerId", "ID" - but not "paid" or "valid".
            suffixed = [c for c in unique if re.search(r"(^|[_\s-])id$|[a-z]Id$|ID$", c)]
            test_id = (exact or suffixed or [None])[0]
            id_column = test_id
        if id_column is None:
            id_column = "id"
            self.assume("ids: no key column anywhere; test rows are numbered in file order as 'id'")
        if test_id is None and self.test_df is not None and id_column in test_cols:
            test_id = id_column
        if test_id is None and self.test_df is not None:
            if self.sample_df is None:
                shown = [row.get(id_column, "") for row in self.example_rows]
                self.test_row_start = int(shown[0]) if shown and shown[0].isdigit() else 1
                self.assume(f"ids: test rows have no {id_column!r} column; they are numbered in file "
                                  f"order from {self.test_row_start}, as the submission example counts")
            else:
                self.assume(f"ids: test rows have no {id_column!r} column; they are matched to the sample's rows in order")
        train_id = roles.train_key if roles.train_key in train_cols else (match_column(train_cols, test_id or id_column) if train_cols else None)
        if self.train_df is not None and train_id is None:
            self.notes.append(f"train has no {id_column!r} column: train rows are identified by position")
        if self.train_df is not None and train_id is not None:
            cells = self.train_df[train_id].astype(str).str.strip()
            repeated = len(cells) - int(cells.nunique(dropna=False))  # duplicated().sum(), hashed by Arrow
            if repeated:
                # Train rows need no unique key: only test rows must be matched to the submission.
                self.train_ids_by_position = True
                self.assume(f"ids: {repeated} train row(s) repeat another's {train_id!r}; train rows are "
                            f"numbered by position, and {train_id!r} still names the test rows")
        return id_column, train_id, test_id

    # ------------------------------------------------------------ features

    def _features(self, train_id: str | None, test_id: str | None, targets: list[str],
                  image: ImageLayout | None) -> tuple[list[str], list[str]]:
        if self.train_df is None or self.test_df is None:
            return [], []
        skip = {train_id, test_id, *targets, *self.dropped}
        train_cols, test_cols = list(self.train_df.columns), list(self.test_df.columns)
        # Sets for the membership tests: lists made a 20,000-column table quadratic.
        in_train, in_test = set(train_cols), set(test_cols)
        for c in (c for c in train_cols if c not in in_test and c not in skip):
            self.dropped[c] = "in train but not in test: not available at prediction time"
        for c in (c for c in test_cols if c not in in_train and c not in skip):
            self.dropped[c] = "in test but not in train: nothing to learn it from"
        tabular, text = [], []
        if train_id and train_id == test_id and train_id in test_cols and self._is_timestamp(self.train_df[train_id]):
            # A timestamp id (hourly rentals, daily sales) carries the seasonality a model needs.
            tabular.append(train_id)
            self.notes.append(f"the id column {train_id!r} holds timestamps: also used as a feature")
        elif train_id and train_id == test_id and train_id in test_cols and self._is_text(self.train_df[train_id]):
            text.append(train_id)
            self.notes.append(f"the key column {train_id!r} is free text: also used as a feature")
        shared = [c for c in train_cols if c in in_test and c not in skip]
        profiles = column_profiles(self.train_df[shared])  # one pass: a wide table's columns cost once
        constant = constant_columns(self.train_df[shared], profiles)
        for c in constant:
            self.dropped[c] = "one value in every training row: nothing to learn from it"
        if constant:
            self.notes.append(f"{len(constant)} constant column(s) dropped: {', '.join(constant[:5])}"
                              + (", ..." if len(constant) > 5 else ""))
        for c in (c for c in shared if c not in self.dropped):
            # Six words need eleven characters: shorter cells are numbers, codes and categories.
            (text if profiles[c].longest >= 11 and self._is_text(self.train_df[c]) else tabular).append(c)
        return tabular, text

    def _series(self, catalogue: Catalogue, tabular: list[str]) -> SeriesShape | None:
        """Many series and a test in their future (perception/series.py); the plan says so."""
        if self.train_df is None or self.test_df is None or not tabular:
            return None
        main = {*(self.roles.train.files if self.roles.train else []), *(self.roles.test.files if self.roles.test else []),
                self.roles.sample}
        side = [(t.path.as_posix(), t.frame) for t in catalogue.tables if t.path.as_posix() not in main]
        series = find_series(self.train_df, self.test_df, tabular, side)
        if series is not None:
            self.notes.append(series.describe())
        return series

    def _row_files(self, catalogue: Catalogue, id_column: str, train_id: str | None, test_id: str | None) -> RowFiles | None:
        if self.train_df is None or self.test_df is None or not train_id or not test_id:
            return None
        if not (catalogue.texts or catalogue.others):
            return None
        return find_row_files(self.raw, catalogue.texts, catalogue.others, set(present(self.train_df[train_id])),
                              set(present(self.test_df[test_id])), self.notes)

    @staticmethod
    def _is_timestamp(series: pd.Series) -> bool:
        values = present(series).head(500)
        if values.empty or as_numbers(values) is not None:
            return False
        parsed = pd.to_datetime(values, errors="coerce", format="mixed")
        # dateutil reads a code such as "t001" as the year 1: a timestamp lies in a plausible era.
        plausible = parsed.dt.year.between(1800, 2200)
        return bool(plausible.mean() >= 0.95)

    @staticmethod
    def _is_text(series: pd.Series) -> bool:
        """Long, mostly unique free text; names, codes and categories stay tabular."""
        if _longest_cell(series) < 11:
            return False  # read by Arrow in one pass: a wide table's thousands of number columns
        values = present(series)
        # Six words need eleven characters and five whitespace characters between them: a column
        # with fewer on average (numbers, codes) is not text, known without parsing a million
        # cells as numbers.
        if values.empty or values.str.len().mean() < 11 or values.str.count(_whitespace_class()).mean() < 5:
            return False
        if values.nunique() < 0.5 * len(values):
            return False
        if as_numbers(values) is not None or is_bool_like(values):
            return False
        words = values.str.split().str.len().mean()
        return bool(words >= 6 and values.nunique() >= 0.5 * len(values))
