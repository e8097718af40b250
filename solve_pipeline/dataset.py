"""Setup maps → feature blocks aligned to train/test ids.

Three blocks are kept apart so each model can pick what suits it: trees want the dense
tabular block with category codes, linear models want one-hot + TF-IDF, nets want tensors.
Everything here is unsupervised: no transform ever looks at a target.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from solve_pipeline.setup_modules import SetupArtifacts

# Above this many levels a category code is no longer handed to LightGBM as categorical
# (it overfits) nor one-hot encoded for linear models; the code stays as an ordinal column.
MAX_CATEGORICAL_LEVELS = 200
# More levels than this also earn a frequency encoding (a cheap, leak-free popularity signal).
FREQUENCY_ENCODING_LEVELS = 20
# Columns whose values are nearly all distinct (names, free ids) carry nothing as codes.
MAX_UNIQUE_RATIO_FOR_CODES = 0.5
DATE_SAMPLE = 1000
COMPOUND_DELIMITERS = ("/", "_", "-", ":", "|")
ID_DELIMITERS = ("_", "-", "/", ":", ".")
MAX_ID_GROUP_SIZE = 100
_DIGIT = re.compile(r"\d")

# From this many training rows a table is "big": fewer folds, boosting leads the race with a
# faster learning rate, and the race's pace-setter gets a share of the race, not all of it.
BIG_ROWS = 200_000
BIG_FOLDS = 3

# Column kinds in the tabular block; linear models treat them differently.
NUMERIC, CATEGORY, ORDINAL_CODE, FREQUENCY, DATE_PART, TEXT_STAT = (
    "numeric", "category", "ordinal_code", "frequency", "date_part", "text_stat",
)


@dataclass
class FeatureSet:
    """Feature blocks; row i of every train block belongs to train_ids[i] (same for test)."""

    train_ids: list[str]
    test_ids: list[str]
    tab_train: np.ndarray
    tab_test: np.ndarray
    tab_names: list[str] = field(default_factory=list)
    tab_kinds: list[str] = field(default_factory=list)
    text_train: sparse.csr_matrix | None = None
    text_test: sparse.csr_matrix | None = None
    image_train: np.ndarray | None = None
    image_test: np.ndarray | None = None
    image_shape: tuple[int, int, int] | None = None  # (channels=image columns, h, w)
    # Text columns of each row joined with " | ", for models that read raw text (sentence encoders).
    raw_text_train: list[str] | None = None
    raw_text_test: list[str] | None = None
    # The same texts column by column (insertion order = the map's column order), for models that
    # treat each text field on its own (text pairs, per-column embeddings).
    raw_text_columns_train: dict[str, list[str]] | None = None
    raw_text_columns_test: dict[str, list[str]] | None = None
    # Image files per image column ("" where a row has none), for pretrained backbones that read
    # the photos at their own resolution and in colour.
    image_paths_train: dict[str, list[str]] | None = None
    image_paths_test: dict[str, list[str]] | None = None
    # Where expensive unsupervised transforms (pretrained embeddings) keep their results between
    # runs over the same workspace; None: nowhere.
    cache_dir: Path | None = None

    @property
    def categorical_indices(self) -> list[int]:
        return [i for i, kind in enumerate(self.tab_kinds) if kind == CATEGORY]

    @property
    def n_train(self) -> int:
        return len(self.train_ids)

    @property
    def n_test(self) -> int:
        return len(self.test_ids)

    @property
    def big(self) -> bool:
        return self.n_train >= BIG_ROWS


def _aligned(frame: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
    """Rows of a map in `ids` order; ids absent from the map become all-missing rows."""
    return frame.drop_duplicates("id").set_index("id").reindex(list(ids))


def _numeric_or_none(values: pd.Series) -> pd.Series | None:
    """The column as floats when (nearly) every present value is a number, else None."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    if pd.api.types.is_numeric_dtype(values):
        return values.astype(float)
    present = values.dropna()
    if present.empty:
        return None
    as_text = values.astype("string").str.strip()
    lowered = as_text.str.lower()
    # Spreadsheet booleans (TRUE/FALSE) are ordered facts; 0/1 keeps them usable by linear models.
    if set(lowered.dropna().unique()) <= {"true", "false"}:
        return lowered.map({"true": 1.0, "false": 0.0}).astype(float)
    parsed = pd.to_numeric(as_text, errors="coerce")
    if parsed.notna().sum() >= 0.95 * len(present):
        return parsed.astype(float)
    return None


def _dates_or_none(values: pd.Series) -> pd.Series | None:
    """Parsed timestamps when most sampled values contain a digit and parse as a date."""
    present = values.dropna().astype(str)
    if present.empty:
        return None
    sample = pd.Series(present.unique()[:DATE_SAMPLE])
    if sample.str.contains(_DIGIT).mean() < 0.9:
        return None  # month names alone, codes like "C85" handled as categories instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pd.to_datetime(sample, errors="coerce", format="mixed", utc=True).notna().mean() < 0.9:
            return None
        return pd.to_datetime(values.astype("string"), errors="coerce", format="mixed", utc=True)


def _date_parts(name: str, stamps: pd.Series) -> dict[str, pd.Series]:
    parts = {
        f"{name}__year": stamps.dt.year,
        f"{name}__month": stamps.dt.month,
        f"{name}__day": stamps.dt.day,
        f"{name}__dayofweek": stamps.dt.day_of_week,
        f"{name}__hour": stamps.dt.hour,
        # Elapsed days keep the trend that year/month alone chop into steps.
        f"{name}__days": (stamps - stamps.min()).dt.total_seconds() / 86400.0,
    }
    return {key: value.astype(float) for key, value in parts.items()}


def _tabular_columns(both: pd.DataFrame) -> tuple[dict[str, pd.Series], dict[str, str]]:
    """Encode every column of train+test stacked; returns columns and their kinds."""
    columns: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    n_rows = max(len(both), 1)
    for name in both.columns:
        values = both[name]
        if values.isna().all():
            continue
        numeric = _numeric_or_none(values)
        if numeric is not None:
            columns[str(name)], kinds[str(name)] = numeric, NUMERIC
            continue
        stamps = _dates_or_none(values)
        if stamps is not None:
            for key, part in _date_parts(str(name), stamps).items():
                columns[key], kinds[key] = part, DATE_PART
            continue
        # Categories come from the union of train and test values: unsupervised, so no leakage,
        # and a test-only level gets its own code instead of colliding with a train level.
        text = values.astype("string").str.strip()
        levels = sorted(text.dropna().unique())
        codes = pd.Series(pd.Categorical(text, categories=levels).codes, index=values.index)
        codes = codes.astype(float).where(codes >= 0)
        if len(levels) <= MAX_CATEGORICAL_LEVELS:
            columns[str(name)], kinds[str(name)] = codes, CATEGORY
        elif len(levels) <= MAX_UNIQUE_RATIO_FOR_CODES * n_rows:
            columns[str(name)], kinds[str(name)] = codes, ORDINAL_CODE
        if len(levels) > FREQUENCY_ENCODING_LEVELS:
            counts = text.map(text.value_counts()).astype(float)
            columns[f"{name}__freq"], kinds[f"{name}__freq"] = counts / n_rows, FREQUENCY
            for key, (part, kind) in _compound_parts(str(name), text).items():
                columns[key], kinds[key] = part, kind
    return columns, kinds


def _compound_parts(name: str, text: pd.Series) -> dict[str, tuple[pd.Series, str]]:
    """Parts of a compound code ("B/0/P": deck, number, side) when one delimiter splits nearly
    every value into the same 2-4 parts; each part becomes a number or a category of its own."""
    present = text.dropna()
    if present.empty:
        return {}
    sample = present.iloc[:DATE_SAMPLE]
    for delimiter in COMPOUND_DELIMITERS:
        counts = sample.str.count(re.escape(delimiter)) + 1
        width = int(counts.mode().iloc[0])
        if not 2 <= width <= 4 or (counts == width).mean() < 0.95:
            continue
        pieces = text.str.split(delimiter, n=width - 1, expand=True, regex=False)
        if pieces.shape[1] != width:
            continue
        parts: dict[str, tuple[pd.Series, str]] = {}
        for i in range(width):
            piece = pieces[i].str.strip().replace("", pd.NA)
            numeric = _numeric_or_none(piece)
            if numeric is not None:
                parts[f"{name}__part{i}"] = (numeric, NUMERIC)
                continue
            levels = sorted(piece.dropna().unique())
            if 1 < len(levels) <= MAX_CATEGORICAL_LEVELS:
                codes = pd.Series(pd.Categorical(piece, categories=levels).codes, index=text.index)
                parts[f"{name}__part{i}"] = (codes.astype(float).where(codes >= 0), CATEGORY)
        return parts
    return {}


def id_prefix(ids: Sequence[str]) -> tuple[str, np.ndarray] | None:
    """The leading part of compound ids (`0001_02` -> `0001`) when one delimiter splits nearly
    every id in two parts or more and the prefixes repeat; (delimiter, prefixes) or None."""
    if not ids:
        return None
    values = pd.Series(list(ids), dtype="string")
    for delimiter in ID_DELIMITERS:
        split = values.str.split(re.escape(delimiter), n=1, regex=True)
        if (split.str.len() == 2).mean() < 0.95:
            continue
        prefixes = split.str[0].fillna("").to_numpy(dtype=object)
        groups = len(set(prefixes))
        # Entities repeat a few times each; one shared prefix ("id_0001") or a handful of huge
        # ones (a year before a date) are no entities.
        if 2 <= groups < 0.9 * len(prefixes) and len(prefixes) / groups <= MAX_ID_GROUP_SIZE:
            return delimiter, prefixes
    return None


def _id_parts(ids: list[str]) -> dict[str, pd.Series]:
    """Group features a compound id hides (`gggg_pp`: a travel party, a household): the group's
    size over train and test, and the member's number within it when it is one."""
    found = id_prefix(ids)
    if found is None:
        return {}
    delimiter, prefixes = found
    keys = pd.Series(prefixes)
    parts = {"id__group_size": keys.map(keys.value_counts()).astype(float)}
    member = pd.to_numeric(pd.Series(ids, dtype="string").str.split(re.escape(delimiter), n=1, regex=True).str[1],
                           errors="coerce")
    if member.notna().mean() >= 0.95:
        parts["id__member"] = member.astype(float)
    return parts


def _text_values(frame: pd.DataFrame, column: str) -> list[str]:
    return frame[column].fillna("").astype(str).tolist()


def _tfidf_block(train_texts: list[str], test_texts: list[str], max_features: int) -> tuple:
    """Word 1-2 grams + char_wb 2-5 grams for one text column (None if no vocabulary)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    # Fitted on train+test texts: vocabulary and IDF need no labels, and test-only words then
    # carry weight. This is the usual Kaggle choice; CV stays honest because nothing sees targets.
    corpus = train_texts + test_texts
    min_df = 2 if len(corpus) >= 50 else 1
    blocks_train, blocks_test = [], []
    for kwargs in (
        {"analyzer": "word", "ngram_range": (1, 2), "token_pattern": r"(?u)\b\w+\b"},
        {"analyzer": "char_wb", "ngram_range": (2, 5)},
    ):
        vectorizer = TfidfVectorizer(
            min_df=min_df, max_features=max(max_features // 2, 1), sublinear_tf=True,
            strip_accents="unicode", dtype=np.float32, **kwargs,
        )
        try:
            vectorizer.fit(corpus)
        except ValueError:  # empty vocabulary: every text empty or pruned away
            continue
        blocks_train.append(vectorizer.transform(train_texts))
        blocks_test.append(vectorizer.transform(test_texts))
    if not blocks_train:
        return None, None
    return sparse.hstack(blocks_train).tocsr(), sparse.hstack(blocks_test).tocsr()


def _image_path(path_value: object, base: Path) -> str:
    """The file a map's cell names, relative paths read from the setup folder ("" for none)."""
    if not isinstance(path_value, str) or not path_value.strip():
        return ""
    path = Path(path_value.strip())
    return str(path if path.is_absolute() else base / path)


def _load_image(path: str, size: int) -> np.ndarray:
    from PIL import Image

    pixels = np.zeros((size, size), dtype=np.float32)
    if not path:
        return pixels
    try:
        with Image.open(path) as image:
            image = image.convert("L").resize((size, size), Image.Resampling.BILINEAR)
            pixels = np.asarray(image, dtype=np.float32) / 255.0
    except (OSError, ValueError) as error:  # a broken file should cost one row, not the run
        warnings.warn(f"cannot read image {path}: {error}")
    return pixels


def _image_paths(frame: pd.DataFrame, base: Path) -> dict[str, list[str]]:
    return {str(c): [_image_path(v, base) for v in frame[c].tolist()] for c in frame.columns}


def _image_block(paths: dict[str, list[str]], rows: int, size: int) -> np.ndarray:
    stacks = [
        np.stack([_load_image(p, size) for p in column]) if rows else
        np.zeros((0, size, size), dtype=np.float32)
        for column in paths.values()
    ]
    return np.stack(stacks, axis=1)  # (rows, image columns, size, size)


def build_features(
    artifacts: SetupArtifacts,
    *,
    max_text_features: int = 30000,
    image_size: int = 32,
    train_ids: Sequence[str] | None = None,
) -> FeatureSet:
    """Build the three feature blocks for the train ids (default: every row with targets)."""
    train_ids = list(artifacts.train_ids if train_ids is None else train_ids)
    test_ids = artifacts.test_ids
    n_train = len(train_ids)
    text_columns_train: dict[str, list[str]] = {}
    text_columns_test: dict[str, list[str]] = {}

    tab_parts: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    if "tab" in artifacts.train_maps:
        train_tab = _aligned(artifacts.train_maps["tab"], train_ids)
        test_tab = _aligned(artifacts.test_maps["tab"], test_ids)
        common = [c for c in train_tab.columns if c in test_tab.columns]
        both = pd.concat([train_tab[common], test_tab[common]], ignore_index=True)
        tab_parts, kinds = _tabular_columns(both)
        for key, values in _id_parts([*train_ids, *test_ids]).items():
            tab_parts[key], kinds[key] = values, FREQUENCY
    text_train = text_test = None
    if "txt" in artifacts.train_maps:
        train_txt = _aligned(artifacts.train_maps["txt"], train_ids)
        test_txt = _aligned(artifacts.test_maps["txt"], test_ids)
        columns = [c for c in train_txt.columns if c in test_txt.columns]
        budget = max(max_text_features // max(len(columns), 1), 2)
        blocks_train, blocks_test = [], []
        for column in columns:
            texts_train, texts_test = _text_values(train_txt, column), _text_values(test_txt, column)
            text_columns_train[column], text_columns_test[column] = texts_train, texts_test
            block_train, block_test = _tfidf_block(texts_train, texts_test, budget)
            if block_train is not None:
                blocks_train.append(block_train)
                blocks_test.append(block_test)
            # Length and word count are strong, cheap signals that trees cannot read from TF-IDF.
            everything = pd.Series(texts_train + texts_test, dtype="string")
            for stat, values in (("len", everything.str.len()),
                                 ("words", everything.str.split().str.len())):
                key = f"{column}__{stat}"
                tab_parts[key], kinds[key] = values.astype(float).reset_index(drop=True), TEXT_STAT
        if blocks_train:
            text_train = sparse.hstack(blocks_train).tocsr().astype(np.float32)
            text_test = sparse.hstack(blocks_test).tocsr().astype(np.float32)

    image_train = image_test = None
    image_shape = None
    image_paths_train = image_paths_test = None
    if "img" in artifacts.train_maps:
        train_img = _aligned(artifacts.train_maps["img"], train_ids)
        test_img = _aligned(artifacts.test_maps["img"], test_ids)
        columns = [c for c in train_img.columns if c in test_img.columns]
        if columns:
            image_paths_train = _image_paths(train_img[columns], artifacts.setup_dir)
            image_paths_test = _image_paths(test_img[columns], artifacts.setup_dir)
            block_train = _image_block(image_paths_train, len(train_ids), image_size)
            block_test = _image_block(image_paths_test, len(test_ids), image_size)
            image_shape = (len(columns), image_size, image_size)
            image_train = block_train.reshape(len(train_ids), -1)
            image_test = block_test.reshape(len(test_ids), -1)

    names, matrix_columns = [], []
    for name, values in tab_parts.items():
        array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        train_part = array[:n_train]
        present = train_part[~np.isnan(train_part)]
        # Constant (or all-missing) in train: nothing to learn, and it would only confuse scalers.
        if present.size == 0 or np.all(present == present[0]):
            continue
        names.append(name)
        matrix_columns.append(array)
    if matrix_columns:
        matrix = np.column_stack(matrix_columns).astype(np.float32)
    else:
        matrix = np.zeros((n_train + len(test_ids), 0), dtype=np.float32)
    return FeatureSet(
        train_ids=train_ids,
        test_ids=test_ids,
        tab_train=matrix[:n_train],
        tab_test=matrix[n_train:],
        tab_names=names,
        tab_kinds=[kinds[n] for n in names],
        text_train=text_train,
        text_test=text_test,
        image_train=image_train,
        image_test=image_test,
        image_shape=image_shape,
        raw_text_train=_joined(text_columns_train) if text_columns_train else None,
        raw_text_test=_joined(text_columns_test) if text_columns_test else None,
        raw_text_columns_train=text_columns_train or None,
        raw_text_columns_test=text_columns_test or None,
        image_paths_train=image_paths_train,
        image_paths_test=image_paths_test,
        cache_dir=artifacts.workspace / "solve" / "cache",
    )


def _joined(columns: dict[str, list[str]]) -> list[str]:
    return [" | ".join(part for part in parts if part) for parts in zip(*columns.values(), strict=True)]


class _BlockDataset:
    """Row-indexed view over a FeatureSet side, for torch's DataLoader."""

    def __init__(self, features: FeatureSet, split: str, targets: np.ndarray | None) -> None:
        self.tab = np.nan_to_num(features.tab_train if split == "train" else features.tab_test)
        self.text = features.text_train if split == "train" else features.text_test
        self.image = features.image_train if split == "train" else features.image_test
        self.image_shape = features.image_shape
        self.targets = targets

    def __len__(self) -> int:
        return self.tab.shape[0]

    def __getitem__(self, index: int) -> dict[str, np.ndarray]:
        item: dict[str, np.ndarray] = {"index": np.int64(index), "tab": self.tab[index]}
        if self.text is not None:
            item["text"] = self.text[index].toarray().ravel()
        if self.image is not None and self.image_shape is not None:
            item["image"] = self.image[index].reshape(self.image_shape)
        if self.targets is not None:
            item["target"] = np.asarray(self.targets[index])
        return item


def iterate_batches(
    features: FeatureSet,
    batch_size: int,
    *,
    split: str = "train",
    targets: np.ndarray | None = None,
    shuffle: bool = False,
    seed: int = 0,
) -> Iterator[dict]:
    """Yield dicts of torch tensors (`index`, `tab`, and `text`/`image`/`target` when present)."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    if split not in ("train", "test"):
        raise ValueError("split must be 'train' or 'test'")

    class _TorchDataset(_BlockDataset, Dataset):
        pass

    dataset = _TorchDataset(features, split, targets)
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)
    yield from loader
