"""The matrices the families read, made by fitted maps: the unsupervised transforms are fitted on
train and test stacked (as the race always did) and kept, so that a predictor can make the test
side of the same matrices from unseen rows (`InputReplay.test`), by the same code.

`Matrices` is the (train, test) pair every family's inputs return, carrying its replay when the
matrices come from the tabular block, the texts, the pixel grids or the frozen image embeddings
(fusion/pretrained_replay.py); None otherwise (sounds and fine-tuned maps are not replayed).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

POWER_FIT_ROWS = 20000  # Yeo-Johnson's lambdas are fitted on a sample this size at most


class Matrices(tuple):
    """A family's (train, test) matrices; `replay` makes the test side from an unseen tabular block."""

    replay: InputReplay | None

    def __new__(cls, train: Any, test: Any, replay: InputReplay | None = None) -> Matrices:
        pair = super().__new__(cls, (train, test))
        pair.replay = replay
        return pair


@dataclass
class Rows:
    """Some rows' inputs as the families read them: the tabular block, the text block (every text
    column's TF-IDF side by side), the raw texts joined per row, each image column's picture
    files; row i of each is the same row."""

    tab: np.ndarray
    text: sparse.csr_matrix | None = None
    joined: list[str] | None = None
    images: dict[str, list[str]] | None = None
    pixels: np.ndarray | None = None  # the image columns' grey pixel grids, flat (FeatureSet.image_test)
    # What a fitted map computed from these rows once for every family that reads it (a forward
    # pass of each picture through the backbone costs far more than the families' own steps).
    memo: dict[str, Any] = field(default_factory=dict)


class InputReplay:
    """Makes a family's test matrix from the inputs of unseen rows."""

    def test(self, rows: Rows) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class TreeReplay(InputReplay):
    """The tree families read the tabular block as it is (category codes and NaN kept), beside an
    SVD summary of the text block where there is one."""

    svd: Any = None  # the fitted TruncatedSVD
    pixels: bool = False  # the pixel grids follow the table

    def test(self, rows: Rows) -> np.ndarray:
        blocks = [rows.tab]
        if self.pixels:
            blocks.append(_pixels(rows))
        if self.svd is not None:
            blocks.append(self.svd.transform(rows.text))
        return np.hstack(blocks).astype(np.float32)


def _pixels(rows: Rows) -> np.ndarray:
    if rows.pixels is None:
        raise ValueError("the rows hold no pixel grids, which this family reads")
    return rows.pixels


@dataclass(frozen=True)
class DenseScaling:
    """Median imputation, a shape (log1p of skewed non-negative columns, or Yeo-Johnson), standard
    scores clipped at 6, and NaN flags: each statistic fitted once (`fit_dense_scaling`)."""

    medians: np.ndarray
    power: Any  # the fitted PowerTransformer, or None
    skewed: np.ndarray | None  # columns log-compressed (without `power`)
    mean: np.ndarray
    scale: np.ndarray
    flagged: np.ndarray  # the columns that earn a NaN flag

    def apply(self, matrix: np.ndarray) -> np.ndarray:
        values = np.asarray(matrix, dtype=np.float64)
        missing = np.isnan(values)
        return self._finish(_shaped(np.where(missing, self.medians, values), self.power, self.skewed), missing)

    def _finish(self, shaped: np.ndarray, missing: np.ndarray) -> np.ndarray:
        scored = np.clip((shaped - self.mean) / self.scale, -6.0, 6.0)  # one outlier should not dominate a linear fit
        return np.hstack([scored, missing[:, self.flagged].astype(np.float64)])


def _shaped(imputed: np.ndarray, power: Any, skewed: np.ndarray | None) -> np.ndarray:
    if power is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # overflow chatter on extreme lambdas
            shaped = power.transform(imputed)
        return np.nan_to_num(shaped, nan=0.0, posinf=0.0, neginf=0.0)
    shaped = imputed.copy()
    shaped[:, skewed] = np.log1p(shaped[:, skewed])
    return shaped


def fit_dense_scaling(both: np.ndarray, power: bool = False) -> tuple[DenseScaling, np.ndarray]:
    """The scaling fitted on `both` (train and test stacked), and `both` scaled by it."""
    both = np.asarray(both, dtype=np.float64)
    missing = np.isnan(both)
    medians = np.nanmedian(np.where(missing.all(axis=0), 0.0, both), axis=0)
    imputed = np.where(missing, medians, both)
    transformer, skewed = None, None
    if power:
        from sklearn.preprocessing import PowerTransformer

        sample = imputed
        if len(imputed) > POWER_FIT_ROWS:
            sample = imputed[np.random.default_rng(0).choice(len(imputed), POWER_FIT_ROWS, replace=False)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            transformer = PowerTransformer(method="yeo-johnson", standardize=False).fit(sample)
    else:
        skewed = (imputed.min(axis=0) >= 0) & (np.abs(_skew(imputed)) > 2.0)
    shaped = _shaped(imputed, transformer, skewed)
    std = shaped.std(axis=0)
    scaling = DenseScaling(medians, transformer, skewed, shaped.mean(axis=0), np.where(std > 0, std, 1.0),
                           missing.any(axis=0))
    return scaling, scaling._finish(shaped, missing)


def _skew(matrix: np.ndarray) -> np.ndarray:
    centred = matrix - matrix.mean(axis=0)
    std = centred.std(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = (centred ** 3).mean(axis=0) / np.where(std > 0, std, 1.0) ** 3
    return np.nan_to_num(skew)


@dataclass(frozen=True)
class LinearTable(InputReplay):
    """The linear families' tabular blocks: the dense columns scaled, the categories one-hot."""

    dense: list[int]
    scaling: DenseScaling | None
    categories: list[int]
    encoder: Any  # the fitted OneHotEncoder, or None

    def blocks(self, tab: np.ndarray) -> list[Any]:
        blocks: list[Any] = []
        if self.scaling is not None:
            blocks.append(sparse.csr_matrix(self.scaling.apply(tab[:, self.dense])))
        if self.encoder is not None:
            blocks.append(self.encoder.transform(_levels(tab[:, self.categories])).tocsr())
        return blocks

    with_text: bool = False  # the text block follows the table's
    with_pixels: bool = False  # the pixel grids follow (the text block where there is one)

    def test(self, rows: Rows) -> Any:
        blocks = self.blocks(rows.tab) + ([rows.text] if self.with_text else [])
        if self.with_pixels:
            blocks.append(sparse.csr_matrix(_pixels(rows)))
        return sparse.hstack(blocks).tocsr()


@dataclass(frozen=True)
class ViewReplay(InputReplay):
    """A text family's view: its fitted vectorizer over the joined texts (presence only, for
    `binary`)."""

    vectorizer: Any
    binary: bool = False

    def test(self, rows: Rows) -> Any:
        matrix = self.vectorizer.transform(list(rows.joined or [])).tocsr()
        return present(matrix) if self.binary else matrix


def present(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    binary = matrix.copy()
    binary.data = np.ones_like(binary.data)
    return binary


def _levels(codes: np.ndarray) -> np.ndarray:
    return np.nan_to_num(codes, nan=-1.0)  # missing is a level of its own


def fit_linear_table(train: np.ndarray, test: np.ndarray, dense: list[int], categories: list[int],
                     power: bool = False) -> tuple[list[Any], list[Any], LinearTable]:
    """The scaled dense and one-hot blocks of train and test (fitted on both stacked), and their replay."""
    train_blocks: list[Any] = []
    test_blocks: list[Any] = []
    scaling = encoder = None
    n_train = len(train)
    if dense:
        scaling, scaled = fit_dense_scaling(np.vstack([train[:, dense], test[:, dense]]), power=power)
        train_blocks.append(sparse.csr_matrix(scaled[:n_train]))
        test_blocks.append(sparse.csr_matrix(scaled[n_train:]))
    if categories:
        from sklearn.preprocessing import OneHotEncoder

        both = _levels(np.vstack([train[:, categories], test[:, categories]]))
        encoder = OneHotEncoder(handle_unknown="ignore").fit(both)
        encoded = encoder.transform(both).tocsr()
        train_blocks.append(encoded[:n_train])
        test_blocks.append(encoded[n_train:])
    return train_blocks, test_blocks, LinearTable(dense, scaling, categories, encoder)
