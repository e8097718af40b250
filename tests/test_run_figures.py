"""The run report's charts as Vega-Lite specs and rendered SVG: the layout a reader sees at a
laptop's width (a browser check found labels drawn over each other, half-unit count ticks, a legend
whose symbols were not the marks' and figures filling half the page)."""

from __future__ import annotations

import re

from agentk.report.page import figure
from agentk.report.run_dataset import FeatureColumn, TargetDistribution
from agentk.report.run_solver import Blend, Timeline, TimelinePoint, TrialRow, Tuning
from agentk.report.run_figures import HALF, WIDE, blend_chart, features_chart, target_chart, timeline_chart, tuning_chart


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer") or [spec]


def _svg_width(chart) -> float:
    svg = figure("t", chart).svg
    return float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))


def test_the_timeline_names_models_in_a_legend_not_in_text_drawn_over_each_other() -> None:
    # Two adoptions a fraction of a second apart: text labels beside them would overlap.
    timeline = Timeline(points=[TimelinePoint(seconds=0.1, score=0.4, model="constant"),
                                TimelinePoint(seconds=4.0, score=0.812, model="lightgbm"),
                                TimelinePoint(seconds=4.2, score=0.815, model="lightgbm_te")], end_s=13.0)
    spec = timeline_chart(timeline, True).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in _layers(spec)]
    assert "text" not in marks
    (dots,) = [layer for layer in _layers(spec) if layer["encoding"].get("color")]
    assert dots["encoding"]["color"]["scale"]["domain"] == ["constant", "lightgbm", "lightgbm_te"]
    svg = figure("t", timeline_chart(timeline, True)).svg
    assert all(name in svg for name in ("lightgbm_te", "adopted model"))


def test_count_axes_have_whole_number_ticks_only() -> None:
    features = [FeatureColumn(map="m", column=c, kind=k) for c, k in [("a", "numeric"), ("b", "categorical")]]
    classes = TargetDistribution(column="y", task="binary", rows=3, classes=[("no", 2), ("yes", 1)])
    histogram = TargetDistribution(column="y", task="regression", rows=3, bins=[(0.0, 10.0, 1), (10.0, 20.0, 2)])
    for chart in (features_chart(features), target_chart(classes), target_chart(histogram)):
        svg = figure("t", chart).svg
        # The axis labels drawn: no 0.5 or 1.5 between the whole counts.
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        assert not [label for label in labels if re.fullmatch(r"\d+\.5", label)], labels
    axis = features_chart(features).to_dict()["encoding"]["x"]["axis"]
    assert axis["format"] == "d" and axis["tickMinStep"] == 1


def test_the_blend_legend_uses_the_marks_own_shapes() -> None:
    blend = [Blend(target="y", single_scores={"a": 0.8, "b": 0.81}, blend_scores={"weighted": 0.805})]
    encoding = blend_chart(blend, True).to_dict()["encoding"]
    colour, shape = encoding["color"], encoding["shape"]
    # One field, one domain, one title: Vega-Lite merges them into one legend of the drawn symbols.
    assert colour["field"] == shape["field"] and colour["scale"]["domain"] == shape["scale"]["domain"]
    assert colour.get("title") == shape.get("title") and "legend" not in shape and "legend" not in colour
    assert colour["scale"]["domain"] == ["single model", "blend (nested CV)"]


def test_the_tuning_legend_lists_only_the_kinds_of_trial_drawn() -> None:
    tuning = Tuning(family="lightgbm", base_score=0.8, planned_trials=2, trials=[
        TrialRow(number=0, kind="defaults", score=0.8, best_so_far=0.8), TrialRow(number=1, kind="hebo", score=0.82, best_so_far=0.82)])
    spec = tuning_chart(tuning, True).to_dict()
    (points,) = [layer for layer in _layers(spec) if layer["encoding"].get("color")]
    assert points["encoding"]["color"]["scale"]["domain"] == ["defaults", "hebo"]
    assert ">warm<" not in figure("t", tuning_chart(tuning, True)).svg


def test_wide_figures_fill_the_content_width_and_small_ones_half_of_it() -> None:
    tuning = Tuning(trials=[TrialRow(number=1, kind="hebo", score=0.8, best_so_far=0.8)])
    features = [FeatureColumn(map="m", column="a", kind="numeric")]
    # The whole drawing (axes and legend included) is the width asked for, give or take padding.
    assert abs(_svg_width(tuning_chart(tuning, True)) - WIDE) < 20
    assert abs(_svg_width(features_chart(features)) - HALF) < 20
