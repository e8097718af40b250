"""The solve of masks per picture and class (a mask target with `mask_classes`): each class a binary
mask of its own, scored as the grader does, over (picture, class) pairs.

Mean Dice over pairs is the mean over classes of each class's mean over pictures (every picture
holds every class), so each class is fitted and post-processed on its own: a pixel classifier per
class, its threshold, minimum component area and empty-mask rule tuned on the held-out pictures
(mask_post.py). A class whose model does not beat submitting no mask for it submits none; the
empty masks are submitted first, as in every mask solve.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from agentk.core.mask_targets import class_bit, class_mask
from solve_pipeline.base.cv import emit
from solve_pipeline.pixels.mask_post import MaskScorer, PostProcess, search
from solve_pipeline.pixels.masks import MaskSolve, _Pictures, fit_tuned, read_tests, read_train, split
from solve_pipeline.pixels.scale import resampled
from solve_pipeline.pixels.solve import LIGHT_PAIRS

_RESERVE = 0.8  # of the time left, shared among the classes still to fit; the rest predicts the tests


def _one_class(train: _Pictures, number: int) -> _Pictures:
    return _Pictures(train.ids, train.inputs, [class_mask(labels, number).astype(np.int32) for labels in train.labels],
                     train.shapes)


def solve_class_masks(run: MaskSolve) -> dict:
    """Empty masks first, then a tuned pixel classifier per class; returns (and writes) the record."""
    light, seed = run.light, run.seed
    column, classes = run.target["column"], list(run.target["mask_classes"])
    rng = np.random.default_rng(seed)
    train, n_train = read_train(run.setup, column, rng, limit=LIGHT_PAIRS if light else None)
    test = read_tests(run.setup)
    held, fit = split(train, rng)
    emit("start", n_train=len(train.ids), n_train_total=n_train, n_test=len(test.ids), held_out_pictures=len(held),
         task="segmentation per class", classes=len(classes))
    scorer_args: dict[str, Any] = {"metric": run.metric, "per_object": False}
    zeros = [np.zeros(train.inputs[i].shape, np.float32) for i in held]
    per_class = [_one_class(train, k) for k in range(1, len(classes) + 1)]
    empties = [MaskScorer(probabilities=zeros, truths=[one.labels[i] for i in held], **scorer_args)
               .score(PostProcess(0.5, 0, 0)) for one in per_class]
    empty = float(np.mean(empties))
    run.cv["empty"] = empty
    run.race.append({"family": "empty", "status": "finished", "first_fold_score": empty, "seconds": 0.0})
    blank: Callable[[int], np.ndarray] = lambda index: np.zeros(test.shape(index), np.int32)  # noqa: E731
    if not light:
        run.submit_masks("empty", empty, blank, test)
    began = time.monotonic()
    fitted: dict[int, Any] = {}  # class number -> Fitted, for the classes whose model beats no mask
    scores, lines = list(empties), []
    budget_kept = run.budget
    for k, one in enumerate(per_class, start=1):
        if budget_kept is not None:  # this class's share of what is left
            run.budget = run.elapsed() + _RESERVE * run.left() / (len(classes) - k + 1)
        try:
            def tune(probabilities: list[np.ndarray], one: _Pictures = one) -> tuple[PostProcess, float, str]:
                scorer = MaskScorer(truths=[one.labels[i] for i in held], probabilities=probabilities, **scorer_args)
                post, score = search(scorer, run.higher)
                return post, score, post.describe()

            model = fit_tuned(run, one, held, fit, test, tune, rng)
            if run.direction.better(model.score, empties[k - 1]):
                fitted[k], scores[k - 1] = model, model.score
            lines.append(f"{classes[k - 1]}: {model.score:.4f} (no mask {empties[k - 1]:.4f}; {model.line})")
        except Exception as exc:  # noqa: BLE001 - this class submits no mask; the others go on
            lines.append(f"{classes[k - 1]}: no model ({type(exc).__name__}: {exc})")
            emit("candidate_failed", model=f"pixel_lightgbm[{classes[k - 1]}]", message=f"{type(exc).__name__}: {exc}")
        finally:
            run.budget = budget_kept
    score = float(np.mean(scores))
    if fitted:
        run.model_finished(began, score, "; ".join(lines))
    else:
        run.model_failed(began, RuntimeError("; ".join(lines) or "no class"))

    def masks(index: int) -> np.ndarray:
        picture = test.picture(index)
        labels = np.zeros(picture.shape, np.int32)
        for k, model in fitted.items():  # each class its bit: classes may overlap
            labels[model.post.apply(model.predict(picture)) > 0] |= class_bit(k)
        return resampled(labels, test.shape(index))

    if fitted and run.direction.better(score, empty):
        run.submit_masks("pixel_lightgbm", score, masks, test)
    elif light:
        run.submit_masks("empty", empty, blank, test)
    return run.finish(column, len(held), n_train, len(test.ids), "segmentation per class")
