"""Grades read as numbers: the regression's value handed on as class probabilities with that
expectation, and a ridge on real embeddings of PIL-drawn discs whose grade is their size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from solve_pipeline.base.baseline_models import ModelOptions
from solve_pipeline.base.decoding import Decoder
from solve_pipeline.tables.ordinal import SMOOTHING, OrdinalRegressionModel, grade_probabilities
from solve_pipeline.base.setup_modules import TargetSpec


def test_the_probabilities_carry_the_value_as_their_expected_grade() -> None:
    grades = (3.0, 1.0, 2.0)  # class-index order need not be the grades' order
    proba = grade_probabilities(np.array([0.0, 1.0, 1.25, 2.5, 3.0, 7.0]), grades)
    assert np.allclose(proba.sum(axis=1), 1.0)
    expected = proba @ np.array(grades)
    clipped = np.array([1.0, 1.0, 1.25, 2.5, 3.0, 3.0])
    assert np.allclose(expected, (1 - SMOOTHING) * clipped + SMOOTHING * np.mean(grades))
    assert proba.argmax(axis=1).tolist() == [1, 1, 1, 0, 0, 0]  # nearest grade: 1, 1, 1, 3 (tie up), 3, 3
    # The decoder's cut points act on that expectation: regression + thresholds.
    decoder = Decoder("cutpoints", (1.2, 2.9), grades)
    assert decoder.labels(proba).tolist() == [1, 1, 2, 2, 0, 0]


def _discs(root: Path, n: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(0)
    paths, grades = [], rng.integers(0, 5, size=n)
    for i, grade in enumerate(grades):
        canvas = Image.new("RGB", (96, 96), tuple(int(c) for c in rng.integers(0, 60, size=3)))
        radius = 8 + 7 * int(grade) + int(rng.integers(-2, 3))
        cx, cy = 48 + int(rng.integers(-4, 5)), 48 + int(rng.integers(-4, 5))
        ImageDraw.Draw(canvas).ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=(230, 200, 40))
        canvas.save(root / f"disc{i}.png")
        paths.append(str(root / f"disc{i}.png"))
    return paths, grades


@pytest.mark.integration
def test_a_ridge_on_real_embeddings_reads_the_grade(tmp_path: Path) -> None:
    from scipy.stats import spearmanr

    from solve_pipeline.images.image_backbones import available_backbones, cheapest
    from solve_pipeline.images.image_embedding import ImagePlan, embed_images

    paths, grades = _discs(tmp_path, 40)
    vectors = embed_images(paths, ImagePlan(cheapest(available_backbones()), 96, False, 0.0))
    assert vectors is not None
    X = (vectors - vectors.mean(axis=0)) / (vectors.std(axis=0) + 1e-6)
    spec = TargetSpec("grade", "multiclass", ["0", "1", "2", "3", "4"])
    model = OrdinalRegressionModel(spec, ModelOptions()).fit(X[:30], grades[:30])
    proba = model.predict_proba(X[30:])
    assert proba.shape == (10, 5) and np.allclose(proba.sum(axis=1), 1.0)
    expected = proba @ np.arange(5)
    assert spearmanr(expected, grades[30:]).statistic > 0.8
