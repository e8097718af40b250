"""What the expert works out about a competition (`DataFacts`), and its way of saying it cannot."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentk.core.artifacts import DenseTask, Task, TextTask
from setup_pipeline.expert.images import ImageLayout
from setup_pipeline.expert.mask_targets import MaskTask
from setup_pipeline.expert.pixels import PixelTask
from setup_pipeline.expert.row_files import RowFiles
from setup_pipeline.perception.lookup_table import LookupTable
from setup_pipeline.perception.recipe import TableRecipe
from setup_pipeline.perception.series import SeriesShape
from setup_pipeline.perception.windows import WindowShape


class ExpertDeclined(Exception):
    """The expert cannot decide a fact; `reason` is one line saying what and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TargetFact(BaseModel):
    column: str  # train column (per_class_proba: the label column; class folders: "label")
    task: Task | DenseTask | TextTask
    classes: list[str] | None = None  # as written in the data; numeric labels sorted numerically
    sample_values: list[str] = Field(default_factory=list)  # how the sample file writes it
    # A binary target submitted as one probability: the class it is the probability of.
    positive_class: str | None = None
    # A text-to-text target: the input column it rewrites (kept as is most of the time).
    source_column: str | None = None
    # A coordinate on pictures of one fixed size: predictions are clipped to the range seen in train.
    bounds: tuple[float, float] | None = None


class DataFacts(BaseModel):
    train_file: str | None  # the first file of each table, for messages
    test_file: str | None
    train_table: TableRecipe | None = None
    test_table: TableRecipe | None = None
    sample_submission: str | None
    id_column: str
    train_id_column: str | None
    test_id_column: str | None  # None: test rows are matched to the sample by order
    # The train key repeats (a text keying rows, some twice): train rows are numbered instead.
    train_ids_by_position: bool = False
    echo_columns: dict[str, str] = Field(default_factory=dict)  # submission column -> test column repeated
    test_row_id_start: int | None = None  # no key and no sample: test ids number the rows from here
    top_k: int | None = None  # ranking metrics (MAP@K): how many labels a row lists
    row_files: RowFiles | None = None  # a text file per row, named by its id
    # A long submission whose rows name (test row, target) pairs through a lookup table.
    lookup: LookupTable | None = None
    submission_format: Literal["per_target", "per_class_proba", "per_pixel", "per_mask", "per_box"]
    targets: list[TargetFact]
    submission_columns: list[str]
    tabular_columns: list[str]
    text_columns: list[str]
    image: ImageLayout | None
    audio: ImageLayout | None = None  # sound clips, one per example: the images' layout, media "audio"
    pixels: PixelTask | None = None  # an image-to-image task: the target is a picture
    masks: MaskTask | None = None  # a segmentation task: the target is a mask, submitted run-length encoded
    input_modalities: list[Literal["tabular", "text", "image", "audio"]]
    metric: str
    metric_higher_is_better: bool
    dropped_columns: dict[str, str]
    notes: list[str]
    series: SeriesShape | None = None  # forecasting: dated series whose future is the test
    windows: WindowShape | None = None  # labelled time windows of long recordings: a row per window
    assumptions: list[str] = Field(default_factory=list)  # decisions the run made without proof
    evidence: dict[str, str] = Field(default_factory=dict)  # fact -> what decided it

