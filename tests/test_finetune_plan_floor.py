"""The fine-tuning plan skips its timed probe where even the fastest CPU pace could not fit: the
probe loads MiniLM and times real batches (~10 s), which a short budget cannot spare."""

from __future__ import annotations

import numpy as np
import pytest

from solve_pipeline import text_finetune
from solve_pipeline.dataset import FeatureSet
from solve_pipeline.finetune_plan import finetune_options


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
