"""The linear model's regression reads a sparse matrix whose cells are all set (an image
embedding's block) as dense, where RidgeCV's sparse products took minutes per target; a truly
sparse matrix (TF-IDF) stays sparse, and the fit is the same either way."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import RidgeCV

from solve_pipeline.base.baseline_models import LinearModel, dense_if_full
from solve_pipeline.base.setup_modules import TargetSpec


def _seen_by_ridge(monkeypatch: pytest.MonkeyPatch) -> list[type]:
    seen: list[type] = []
    fit = RidgeCV.fit

    def recording(self, X, y, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(type(X))
        return fit(self, X, y, **kwargs)

    monkeypatch.setattr(RidgeCV, "fit", recording)
    return seen


def test_a_full_sparse_matrix_is_fitted_dense_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 12))
    y = X @ rng.normal(size=12) + rng.normal(0, 0.1, 80)
    seen = _seen_by_ridge(monkeypatch)
    spec = TargetSpec("y", "regression", None)
    from_sparse = LinearModel(spec).fit(sparse.csr_matrix(X), y).predict(sparse.csr_matrix(X))
    from_dense = LinearModel(spec).fit(X, y).predict(X)
    assert seen == [np.ndarray, np.ndarray]
    assert np.allclose(from_sparse, from_dense)


def test_a_truly_sparse_matrix_stays_sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    X = sparse.random(80, 40, density=0.05, format="csr", random_state=1)
    seen = _seen_by_ridge(monkeypatch)
    LinearModel(TargetSpec("y", "regression", None)).fit(X, rng.normal(size=80))
    assert len(seen) == 1 and sparse.issparse(dense_if_full(X)) and seen[0] is not np.ndarray
