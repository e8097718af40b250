"""The model-family registry: race order and membership by inputs, what HEBO may tune, and
defaults that lie inside their own search spaces. Hand-built FeatureSets, nothing is trained."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from solve_pipeline.base.dataset import CATEGORY, NUMERIC, TEXT_STAT, FeatureSet
from solve_pipeline.race.registry import (
    FAMILIES,
    LIGHTGBM_DEFAULTS,
    family_candidate,
    race_candidates,
    tunable_for,
)
from solve_pipeline.base.setup_modules import TargetSpec

TABLE_ONLY = ["linear", "lightgbm", "catboost", "extratrees", "random_forest"]


def _features(n: int = 40, levels: int = 3, kinds: tuple[str, str] = (NUMERIC, CATEGORY), **extra: object) -> FeatureSet:
    rng = np.random.default_rng(0)
    tab = np.column_stack([rng.normal(size=n), np.arange(n) % levels]).astype(float)
    return FeatureSet([str(i) for i in range(n // 2)], [str(i) for i in range(n // 2, n)],
                      tab[: n // 2], tab[n // 2:], ["x", "c"], list(kinds), **extra)


def _names(features: FeatureSet, **kwargs: object) -> list[str]:
    return [c.name for c in race_candidates(features, **kwargs)]


def test_race_order_follows_the_inputs() -> None:
    table = _features()
    assert _names(table) == TABLE_ONLY
    assert _names(table, light=True) == ["linear", "lightgbm"]
    assert _names(table, fusion="on") == TABLE_ONLY + ["fusion"]
    assert _names(_features(levels=15)) == ["linear", "lightgbm", "lightgbm_te", *TABLE_ONLY[2:]]
    text = _features(text_train=sparse.csr_matrix(np.ones((20, 3))), text_test=sparse.csr_matrix(np.ones((20, 3))),
                     raw_text_columns_train={"t": ["a"] * 20}, raw_text_columns_test={"t": ["b"] * 20})
    # The text views, cheap ones first.
    views = ["naive_bayes", "naive_bayes_cased", "naive_bayes_counts", "complement_nb", "linear_chars",
             "naive_bayes_chars", "nbsvm", "naive_bayes_char_counts"]
    # Beside a table the logistic model over everything sets the pace; on texts alone naive Bayes.
    assert _names(text) == ["linear", *views, "pretrained_linear", *TABLE_ONLY[1:], "fusion"]
    assert _names(text, fusion="off") == ["linear", *views, "pretrained_linear", *TABLE_ONLY[1:]]
    texts_only = _features(text_train=sparse.csr_matrix(np.ones((20, 3))), text_test=sparse.csr_matrix(np.ones((20, 3))),
                           raw_text_columns_train={"t": ["a"] * 20}, raw_text_columns_test={"t": ["b"] * 20},
                           kinds=(TEXT_STAT, TEXT_STAT))
    assert _names(texts_only, fusion="off") == ["naive_bayes", "linear", *views[1:], "pretrained_linear",
                                                *TABLE_ONLY[1:]]
    # Naive Bayes has no regression form: a regression target keeps it out of the race.
    regression = _names(text, fusion="off", targets=[TargetSpec("y", "regression")])
    assert regression == ["linear", "linear_chars", "pretrained_linear", *TABLE_ONLY[1:]]
    # Three numeric columns or more: the power-transformed linear model races too.
    rng = np.random.default_rng(1)
    wide = FeatureSet(["0", "1"], ["2"], rng.normal(size=(2, 3)), rng.normal(size=(1, 3)), ["a", "b", "c"],
                      [NUMERIC] * 3)
    assert _names(wide) == ["linear", "linear_power", *TABLE_ONLY[1:]]
    photos = _features(image_paths_train={"img": ["a.png"] * 20}, image_paths_test={"img": ["b.png"] * 20})
    # The ImageNet head's family sets the pace on images, the pooled features' follows.
    assert _names(photos) == ["pretrained_head", "pretrained_linear", *TABLE_ONLY]
    # Grades set up as classes: a regression on the grade races beside the classifier; names do not.
    grades = [TargetSpec("grade", "multiclass", ["0", "1", "2", "3", "4"])]
    assert _names(photos, targets=grades) == ["pretrained_head", "pretrained_linear", "linear", "pretrained_ordinal",
                                              *TABLE_ONLY[1:]]
    breeds = [TargetSpec("breed", "multiclass", ["beagle", "pug", "whippet"])]
    assert _names(photos, targets=breeds) == ["pretrained_head", "pretrained_linear", *TABLE_ONLY]
    assert "pretrained_ordinal" not in _names(_features(), targets=grades)  # tables: classes + cut points


def test_what_hebo_may_tune() -> None:
    table = _features()
    binary, regression = [TargetSpec("y", "binary", [0, 1])], [TargetSpec("y", "regression")]
    assert tunable_for("linear", table, binary).defaults == {"C": 1.0}
    assert tunable_for("linear", table, regression) is None  # ridge picks its own alpha
    assert tunable_for("extratrees", table, binary) is None and tunable_for("constant", table, binary) is None
    lightgbm = tunable_for("lightgbm", table, regression)
    assert lightgbm.defaults == LIGHTGBM_DEFAULTS and lightgbm.build(LIGHTGBM_DEFAULTS).name == "lightgbm"


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.space], ids=lambda f: f.name)
def test_defaults_lie_inside_the_space(family) -> None:
    defaults = family.defaults(_features())
    assert set(defaults) == {p.name for p in family.space}
    for param in family.space:
        value = defaults[param.name]
        if param.kind == "cat":
            assert value in param.categories
        else:
            assert param.lb <= value <= param.ub


def test_a_candidate_reads_its_family_matrices() -> None:
    table = _features()
    X, X_test = family_candidate("lightgbm").matrices(table, 0)
    assert X.shape == (20, 2) and X_test.shape == (20, 2)


def test_big_tables_let_boosting_lead(monkeypatch: pytest.MonkeyPatch) -> None:
    """The big-data switches, forced on a tiny table: boosting sets the race's pace, with in-fold
    target encoding when a key of many levels exists, and learns at the faster rate."""
    import solve_pipeline.base.baseline_models as baseline_models
    import solve_pipeline.base.dataset as dataset
    from solve_pipeline.base.baseline_models import LightGBMModel

    table, keyed = _features(), _features(levels=15)
    assert not table.big
    monkeypatch.setattr(dataset, "BIG_ROWS", 10)
    monkeypatch.setattr(baseline_models, "BIG_ROWS", 10)
    assert table.big
    assert _names(table) == ["lightgbm", "linear", *TABLE_ONLY[2:]]
    assert _names(keyed) == ["lightgbm_te", "linear", "lightgbm", *TABLE_ONLY[2:]]
    spec = TargetSpec("y", "binary", [0, 1])
    assert LightGBMModel(spec)._params(20)["learning_rate"] == 0.1
    assert LightGBMModel(spec)._params(5)["learning_rate"] == 0.05


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.portfolio], ids=lambda f: f.name)
def test_portfolio_configurations_lie_inside_the_space(family) -> None:
    for point in family.portfolio:
        assert set(point) == {p.name for p in family.space}
        for param in family.space:
            assert param.lb <= point[param.name] <= param.ub
    tunable = tunable_for(family.name, _features(levels=15), [TargetSpec("y", "binary", [0, 1])])
    assert tunable.portfolio == [dict(p) for p in family.portfolio]
