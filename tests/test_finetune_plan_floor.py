"""The fine-tuning plan skips its timed probe where even the fastest CPU pace could not fit: the
probe loads MiniLM and times real batches (~10 s), which a short budget cannot spare."""

from __future__ import annotations

import numpy as np
import pytest

from solve_pipeline.texts import text_finetune
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.phases.finetune_plan import finetune_options


def _texts(n: int) -> FeatureSet:
    texts = [f"a short sentence number {i} about nothing in particular" for i in range(n)]
    half = n // 2
    return FeatureSet([str(i) for i in range(half)], [str(i) for i in range(half, n)],
                      np.zeros((half, 0), np.float32), np.zeros((n - half, 0), np.float32),
                      raw_text_columns_train={"text": texts[:half]}, raw_text_columns_test={"text": texts[half:]})


def _probe_refused(*_args: object, **_kwargs: object) -> float:
    raise AssertionError("the timed probe ran")


def test_many_texts_and_little_time_skip_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_finetune, "estimate_finetune_seconds", _probe_refused)
    options, notes = finetune_options(_texts(40_000), n_folds=5, seconds=60.0, threads=2)
    assert options == []
    assert len(notes) == 1 and "needs at least" in notes[0] and "on CPU" in notes[0] and "frozen embeddings only" in notes[0]


def test_a_small_set_is_still_priced_by_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    probed: list[int] = []

    def pace(_features: FeatureSet, rows: int, _epochs: float, _threads: int) -> float:
        probed.append(rows)
        return 1.0

    monkeypatch.setattr(text_finetune, "estimate_finetune_seconds", pace)
    options, notes = finetune_options(_texts(400), n_folds=5, seconds=60.0, threads=2)
    assert probed == [160]  # four fifths of the 200 train rows per fold
    assert [o.epochs for o in options] == [3] and notes[0].startswith("text: MiniLM fine-tuning, 3 epochs")


def test_a_dear_fine_tune_needs_the_frozen_embeddings_promise(monkeypatch: pytest.MonkeyPatch) -> None:
    # 100 s an epoch over five folds: one epoch is most of the 150 s left.
    monkeypatch.setattr(text_finetune, "estimate_finetune_seconds", lambda *_args: 20.0)
    options, notes = finetune_options(_texts(400), n_folds=5, seconds=150.0, threads=2, text_promise=0.57)
    assert options == [] and "57%" in notes[0] and "frozen embeddings only" in notes[0]
    options, _ = finetune_options(_texts(400), n_folds=5, seconds=150.0, threads=2, text_promise=0.9)
    assert [o.epochs for o in options] == [1]
    # A cheap one runs whatever the race said (a few hundred texts: first folds are noise).
    options, _ = finetune_options(_texts(400), n_folds=5, seconds=1000.0, threads=2, text_promise=-0.3)
    assert [o.epochs for o in options] == [3]


def test_cpu_fine_tuning_is_planned_with_room_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    # 17.5 s an epoch over five folds: three epochs (52.5 s) fit 60 s, but not the 48 s planned into.
    monkeypatch.setattr(text_finetune, "estimate_finetune_seconds", lambda *_args: 3.5)
    options, notes = finetune_options(_texts(400), n_folds=5, seconds=60.0, threads=2, text_promise=0.95)
    assert [o.epochs for o in options] == [2] and notes[0].startswith("text: MiniLM fine-tuning, 2 epochs")


def test_text_promise_is_the_frozen_familys_share_of_the_leaders_gain() -> None:
    from types import SimpleNamespace

    from solve_pipeline.race.automl import RaceEntry, RaceOutcome
    from solve_pipeline.phases.finetune_phase import text_promise

    def solver(higher: bool, constant: float, images: object = None) -> SimpleNamespace:
        features = SimpleNamespace(image_paths_train=images)
        return SimpleNamespace(ctx=SimpleNamespace(features=features), state=SimpleNamespace(cv={"constant": constant}),
                               higher=higher)

    log_loss = RaceOutcome([RaceEntry("naive_bayes", "finished", 0.34), RaceEntry("pretrained_linear", "pruned", 0.66),
                            RaceEntry("lightgbm", "pruned", 0.69)], [])
    assert text_promise(solver(False, 1.09), log_loss) == pytest.approx((0.66 - 1.09) / (0.34 - 1.09))
    f1 = RaceOutcome([RaceEntry("linear", "finished", 0.75), RaceEntry("pretrained_linear", "finished", 0.77)], [])
    assert text_promise(solver(True, 0.0), f1) == pytest.approx(1.0)
    # Unmeasured, or sharing its family with photos: no promise to judge by.
    assert text_promise(solver(True, 0.0), RaceOutcome([RaceEntry("linear", "finished", 0.75)], [])) is None
    assert text_promise(solver(True, 0.0, images={"photo": []}), f1) is None
    assert text_promise(solver(True, 0.0), None) is None
