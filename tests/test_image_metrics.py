"""Image metrics: run-length masks and box strings (agentk.core.masks / boxes), the dice, iou,
map_iou and map_boxes metrics, reading them from a page, and grading submission files with them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.boxes import box_iou, format_boxes, parse_boxes
from agentk.core.masks import rle_decode, rle_encode, rle_runs
from agentk.core.metrics import (
    METRICS,
    get_metric,
    infer_metric,
    score_class_probabilities,
    score_prediction_frame,
    stated_thresholds,
)
from agentk.bench.baselines import constant_score
from agentk.grading import grade_file, grade_submission
from agentk.sources import load_competition
from agentk.sources.base import GradingFacts
from setup_pipeline.expert.inspect import inspect_competition

dice, iou, map_iou, map_boxes = (METRICS[n].fn for n in ("dice", "iou", "map_iou", "map_boxes"))


def _random_masks(seed: int, n: int = 6, shape: tuple[int, int] = (23, 17)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    masks = [rng.random(shape) < p for p in rng.uniform(0.05, 0.6, size=n)]
    masks[0][:] = False  # an empty mask among them
    return masks


def _np_dice(a: np.ndarray, b: np.ndarray) -> float:
    total = a.sum() + b.sum()
    return 1.0 if total == 0 else 2 * (a & b).sum() / total


# ---------------------------------------------------------------------------------------------
# Run-length encoding


@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("relative", [False, True])
def test_rle_round_trips_random_masks(order: str, relative: bool) -> None:
    for mask in _random_masks(0):
        text = rle_encode(mask, order=order, relative=relative)  # type: ignore[arg-type]
        assert np.array_equal(rle_decode(text, mask.shape, order=order, relative=relative), mask)  # type: ignore[arg-type]
        assert rle_runs(text, relative).area() == mask.sum()
    assert rle_encode(np.zeros((3, 3))) == ""


def test_rle_follows_kaggle_numbering() -> None:
    # The pages' example: '1 3 10 5' is pixels 1,2,3,10..14, numbered top to bottom, then left to right.
    mask = rle_decode("1 3 10 5", (4, 4))
    assert sorted(np.flatnonzero(mask.ravel(order="F")) + 1) == [1, 2, 3, 10, 11, 12, 13, 14]
    assert mask[:3, 0].all() and mask[1:, 2].all() and mask[0, 3] and mask.sum() == 8
    assert rle_encode(mask) == "1 3 10 5"
    assert rle_encode(mask, order="C") != "1 3 10 5"  # row-major numbers the same pixels otherwise
    assert rle_encode(mask, relative=True) == "0 3 6 5"  # offsets from the previous run's end
    for blank in ("", " ", "-1", None, float("nan")):
        assert rle_runs(blank).area() == 0
    for bad in ("1 2 3", "1 x", "-4 2"):
        with pytest.raises(ValueError):
            rle_runs(bad)
    with pytest.raises(ValueError, match="reaches pixel"):
        rle_decode("10 10", (3, 3))


# ---------------------------------------------------------------------------------------------
# Dice and IoU


def test_dice_and_iou_by_hand() -> None:
    # Pixels 1-4 against 3-6: two shared of four each.
    assert dice(["1 4"], ["3 4"]) == pytest.approx(2 * 2 / 8)
    assert iou(["1 4"], ["3 4"]) == pytest.approx(2 / 6)
    # Rows: a half match, both empty (1 by definition), a miss (0), a truth split over two runs.
    truth = ["1 4", "", "5 2", "1 2 10 2"]
    pred = ["3 4", "", "", "2 10"]  # pixels 2..11 cover 2, 10, 11 of {1, 2, 10, 11}
    assert dice(truth, pred) == pytest.approx((0.5 + 1 + 0 + 2 * 3 / 14) / 4)
    assert iou(truth, pred) == pytest.approx((1 / 3 + 1 + 0 + 3 / 11) / 4)
    # A row given as several strings (several file rows of one image) is their union.
    assert dice([["1 2", "10 2"]], ["1 2 10 2"]) == 1.0


@pytest.mark.parametrize("order", ["F", "C"])
def test_dice_on_encodings_equals_dice_on_the_masks(order: str) -> None:
    truth, pred = _random_masks(1), _random_masks(2)
    expected = np.mean([_np_dice(t, p) for t, p in zip(truth, pred)])
    encoded = [[rle_encode(m, order=order) for m in masks] for masks in (truth, pred)]  # type: ignore[arg-type]
    assert dice(*encoded) == pytest.approx(expected)
    relative = [[rle_encode(m, order=order, relative=True) for m in masks] for masks in (truth, pred)]  # type: ignore[arg-type]
    assert dice(*relative) == pytest.approx(expected)  # read as relative from the answers' runs


@pytest.mark.parametrize("name", ["dice", "iou"])
def test_mask_metrics_rank_perfect_over_empty_and_permuted(name: str) -> None:
    fn = METRICS[name].fn
    masks = _random_masks(3)[1:]  # none empty, so an empty prediction misses everywhere
    truth = [rle_encode(m) for m in masks]
    assert fn(truth, truth) == 1.0
    empty = fn(truth, [""] * len(truth))
    permuted = fn(truth, truth[1:] + truth[:1])
    assert empty == 0.0 and 0 < permuted < 1


def test_unsorted_predicted_runs_are_rejected_as_kaggle_does() -> None:
    with pytest.raises(ValueError, match="sorted"):
        dice(["1 4 20 3"], ["20 3 1 4"])
    # One malformed answer among absolute ones does not make the answers read as relative.
    truth = ["1 4 20 3", "5 2 9 2", "30 3 1 4", "7 1 12 1"]
    assert dice(truth, ["1 4 20 3", "5 2 9 2", "1 4 30 3", "7 1 12 1"]) == 1.0


# ---------------------------------------------------------------------------------------------
# Mean average precision of instance masks


def test_map_iou_by_hand() -> None:
    # True objects {1..4} and {10..13}; predictions {1..4} (IoU 1) and {11..14} (IoU 3/5).
    # t = 0.5, 0.55: both match, precision 1; t = 0.6 .. 0.95 (8): one match, 1 / (1 + 1 + 1).
    assert map_iou([["1 4", "10 4"]], [["1 4", "11 4"]]) == pytest.approx((2 + 8 / 3) / 10)
    # One true object, a perfect prediction and a stray one: TP 1, FP 1 at every threshold.
    assert map_iou([["1 4"]], [["1 4", "30 2"]]) == pytest.approx(0.5)
    # A prediction overlapping two objects matches at most one of them.
    assert map_iou([["1 4", "5 4"]], [["1 8"]]) == pytest.approx(0.0)
    assert map_iou([["1 4"]], [[]]) == 0.0


def test_map_iou_ranks_perfect_over_empty_and_permuted() -> None:
    yy, xx = np.mgrid[:30, :30]
    rng = np.random.default_rng(4)
    images = [[rle_encode((yy - cy) ** 2 + (xx - cx) ** 2 <= 16) for cy, cx in rng.integers(5, 25, size=(3, 2))]
              for _ in range(4)]
    assert map_iou(images, images) == 1.0
    assert map_iou(images, [[] for _ in images]) == 0.0
    assert map_iou(images, images[1:] + images[:1]) < 0.5


# ---------------------------------------------------------------------------------------------
# Mean average precision of boxes


def test_box_parsing_and_iou() -> None:
    boxes = parse_boxes("0.9 10 20 30 40 0.3 0 0 5 5")
    assert boxes.scores.tolist() == [0.9, 0.3] and boxes.xywh[0].tolist() == [10, 20, 30, 40]
    assert parse_boxes("10 20 30 40", confidence=None).scores.tolist() == [1.0]  # an answer without confidences
    assert len(parse_boxes("0.5 10 20 30 40", confidence=None)) == 1  # five numbers: a confidence first
    assert len(parse_boxes(format_boxes([0.2, 0.8], [[1, 2, 3, 4], [5, 6, 7, 8]]))) == 2
    assert parse_boxes(format_boxes([0.2, 0.8], [[1, 2, 3, 4], [5, 6, 7, 8]])).scores[0] == 0.8
    assert len(parse_boxes("")) == 0
    with pytest.raises(ValueError, match="groups of 5"):
        parse_boxes("0.9 1 2 3")
    # Overlap 5x10 of two 10x10 boxes: 50 / 150.
    assert box_iou(np.array([[0, 0, 10, 10]]), np.array([[5, 0, 10, 10]]))[0, 0] == pytest.approx(1 / 3)


def test_map_boxes_by_hand() -> None:
    assert map_boxes(["0 0 10 10"], ["0.9 0 0 10 10 0.5 50 50 5 5"]) == pytest.approx(0.5)  # TP 1, FP 1
    # Shifted 3 px: IoU 70/130 = 0.54 matches at t = 0.5 only, of the six thresholds 0.5..0.75.
    assert map_boxes(["0 0 10 10"], ["1 3 0 10 10"]) == pytest.approx(1 / 6)
    # The most confident box matches first: P1 overlaps A (0.54) and B (0.82) and takes B; P2
    # overlaps only B (0.67), so it is a false positive and A a false negative: 1 / 3.
    truth, p1, p2 = ["0 0 10 10 4 0 10 10"], "3 0 10 10", "6 0 10 10"
    thresholds = (0.5,)
    assert map_boxes(truth, [f"0.9 {p1} 0.5 {p2}"], thresholds=thresholds) == pytest.approx(1 / 3)
    assert map_boxes(truth, [f"0.5 {p1} 0.9 {p2}"], thresholds=thresholds) == pytest.approx(1.0)


def test_map_boxes_counts_images_as_rsna_does() -> None:
    # Neither truth nor prediction: left out. Predictions on an image without truth: 0, counted.
    assert map_boxes(["", "0 0 10 10"], ["", "1 0 0 10 10"]) == 1.0
    assert map_boxes(["", "0 0 10 10"], ["0.3 5 5 5 5", "1 0 0 10 10"]) == 0.5
    assert map_boxes(["", ""], ["", ""]) == 1.0


def test_map_boxes_ranks_perfect_over_empty_and_permuted() -> None:
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 300, size=(int(rng.integers(1, 4)), 4)) + [0, 0, 20, 20] for _ in range(5)]
    truth = [" ".join(f"{x} {y} {w} {h}" for x, y, w, h in boxes) for boxes in images]
    perfect = [format_boxes(np.ones(len(b)), b) for b in images]
    assert map_boxes(truth, perfect) == 1.0
    assert map_boxes(truth, [""] * len(truth)) == 0.0
    assert map_boxes(truth, perfect[1:] + perfect[:1]) < 0.5


# ---------------------------------------------------------------------------------------------
# The registry, scoring helpers and page reading


def test_registry_kinds_and_callers_that_cannot_take_them() -> None:
    assert {n: (METRICS[n].kind, METRICS[n].higher_is_better) for n in ("dice", "iou", "map_iou", "map_boxes")} == {
        "dice": ("mask", True), "iou": ("mask", True), "map_iou": ("instances", True), "map_boxes": ("boxes", True)}
    assert get_metric("Jaccard").name == "iou" and get_metric("SIIMDice").name == "dice"
    assert get_metric("IntersectionOverUnionObjectSegmentation").name == "map_iou"
    with pytest.raises(ValueError, match="mask strings, not class probabilities"):
        score_class_probabilities("dice", ["a"], [[1.0]], ["a"])


def test_prediction_frames_score_an_ids_rows_as_one_image() -> None:
    y_true = pd.DataFrame({"id": ["a", "a", "b"], "px": ["1 4", "10 4", "3 3"]})
    y_pred = pd.DataFrame({"id": ["b", "a", "a"], "px": ["3 3", "11 4", "1 4"]})
    assert score_prediction_frame("map_iou", y_true, y_pred, ["px"]) == pytest.approx((1 + (2 + 8 / 3) / 10) / 2)
    with pytest.raises(ValueError, match="ids differ"):
        score_prediction_frame("dice", y_true, y_pred[y_pred["id"] == "a"], ["px"])


_MASK_PAGE = """# Nuclei

## Evaluation

This competition is evaluated on the mean average precision at different intersection over union (IoU)
thresholds. The IoU of a proposed set of object pixels and a set of true object pixels is computed per
object. The threshold values range from 0.5 to 0.95 with a step size of 0.05.

Submissions use run-length encoding on the pixel values.
"""
_BOX_PAGE = _MASK_PAGE.replace("set of object pixels and a set of true object pixels",
                               "set of predicted bounding boxes and ground truth bounding boxes")
_DICE_PAGE = "## Evaluation\n\nThis competition is evaluated on the mean Dice coefficient of the predicted masks.\n"
_DENOISE_PAGE = ("## Evaluation\n\nSubmissions are evaluated on the root mean squared error between the cleaned "
                 "pixel intensities and the actual grayscale pixel intensities.\n")


def test_pages_read_as_their_image_metric() -> None:
    assert infer_metric(_MASK_PAGE).name == "map_iou"
    assert infer_metric(_BOX_PAGE).name == "map_boxes"
    assert infer_metric(_DICE_PAGE).name == "dice"
    assert infer_metric(_DENOISE_PAGE).name == "rmse"  # per-pixel RMSE is plain rmse over pixel rows
    assert stated_thresholds(_MASK_PAGE) == MASK_THRESHOLDS
    # Without masks or boxes on the page, the same words name no image metric.
    word_level = infer_metric("## Evaluation\n\nThe metric in this competition is the word-level Jaccard score.\n")
    assert word_level.name is None and word_level.unsupported == "intersection over union"


MASK_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


# ---------------------------------------------------------------------------------------------
# Grading files


def _mlebench(root: Path, page: str, answers: str, sample: str) -> Path:
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "public" / "description.md").write_text(page)
    (root / "public" / "sample_submission.csv").write_text(sample)
    (root / "private" / "test.csv").write_text(answers)
    return root


def test_grader_scores_instance_mask_files(tmp_path: Path) -> None:
    # One row per object, ids repeated, rows in any order; image "b" has one object.
    answers = "ImageId,EncodedPixels\na,1 4\na,10 4\nb,3 3\n"
    root = _mlebench(tmp_path / "comp", _MASK_PAGE, answers, "ImageId,EncodedPixels\na,1 1\nb,1 1\n")
    competition = load_competition(root)
    assert competition.grading is not None and competition.grading.metric == "map_iou"
    submission = tmp_path / "submission.csv"
    submission.write_text("ImageId,EncodedPixels\nb,3 3\na,11 4\na,1 4\n")
    report = grade_file(submission, competition)
    assert report.valid and report.score == pytest.approx((1 + (2 + 8 / 3) / 10) / 2)
    submission.write_text("ImageId,EncodedPixels\na,1 4\n")
    missing = grade_file(submission, competition)
    assert not missing.valid and "1 missing" in str(missing.error)
    submission.write_text("ImageId,EncodedPixels\na,1 4\nb,9 2 3 3\n")
    unsorted = grade_file(submission, competition)
    assert not unsorted.valid and "sorted" in str(unsorted.error)


def test_grader_scores_box_files(tmp_path: Path) -> None:
    answers = "patientId,PredictionString\np1,0 0 10 10\np2,\np3,\n"
    root = _mlebench(tmp_path / "comp", _BOX_PAGE, answers, "patientId,PredictionString\np1,\np2,\np3,\n")
    competition = load_competition(root)
    assert competition.grading is not None and competition.grading.metric == "map_boxes"
    submission = tmp_path / "submission.csv"
    # p1: TP + FP; p2: nothing either side (left out); p3: a false positive on an empty image (0).
    submission.write_text("patientId,PredictionString\np1,0.9 0 0 10 10 0.2 40 40 5 5\np2,\np3,0.1 1 1 4 4\n")
    report = grade_file(submission, competition)
    assert report.valid and report.score == pytest.approx((0.5 + 0) / 2)


def test_grader_scores_dice_rows_with_blank_masks(tmp_path: Path) -> None:
    answers = pd.DataFrame({"Image_Label": ["i1_Fish", "i1_Sugar", "i2_Fish"], "EncodedPixels": ["1 4", "", "5 5"]})
    facts = GradingFacts("dice", True, "Image_Label", ("EncodedPixels",))
    (tmp_path / "submission.csv").write_text("Image_Label,EncodedPixels\ni2_Fish,\ni1_Sugar,\ni1_Fish,3 4\n")
    submission = pd.read_csv(tmp_path / "submission.csv", dtype={"Image_Label": str})
    report = grade_submission(submission, answers, facts)
    assert report.valid and report.answers_missing == 0
    assert report.score == pytest.approx((0.5 + 1 + 0) / 3)


def test_constant_baseline_submits_empty_masks(tmp_path: Path) -> None:
    answers = "ImageId,EncodedPixels\na,1 4\na,10 4\nb,3 3\n"
    competition = load_competition(_mlebench(tmp_path / "comp", _MASK_PAGE, answers,
                                             "ImageId,EncodedPixels\na,1 1\nb,1 1\n"))
    assert constant_score(competition) == 0.0  # no object found on any image


def test_the_expert_says_it_cannot_predict_masks_and_assumes_a_metric(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    (tmp_path / "data").mkdir()
    (tmp_path / "description.md").write_text(_DICE_PAGE)
    masks = ["" if i % 3 == 0 else f"{rng.integers(1, 50)} {rng.integers(1, 9)}" for i in range(60)]
    pd.DataFrame({"Image_Label": [f"i{i}_Fish" for i in range(60)], "f1": rng.random(60),
                  "EncodedPixels": masks}).to_csv(tmp_path / "data" / "train.csv", index=False)
    pd.DataFrame({"Image_Label": [f"t{i}_Fish" for i in range(20)], "f1": rng.random(20)}).to_csv(
        tmp_path / "data" / "test.csv", index=False)
    pd.DataFrame({"Image_Label": [f"t{i}_Fish" for i in range(20)], "EncodedPixels": "1 1"}).to_csv(
        tmp_path / "data" / "sample_submission.csv", index=False)
    facts = inspect_competition(tmp_path)
    assert not get_metric(facts.metric).spatial
    assert any("dice scores mask strings per image" in note for note in facts.notes), facts.notes
