"""The choice rule on constructed fold scores: within noise of the best, the blend or the less
searched candidate is chosen; clearly better, the best stands; judged on paired fold differences,
with the search's optimism charged to the tuned."""

from __future__ import annotations

from solve_pipeline.base.choice_rule import (
    Evidence,
    best_single_family,
    expected_max,
    margin,
    max_cv,
    within_noise,
)


def _e(name: str, folds: list[float], kind: str = "model", configs: int = 1, families: tuple[str, ...] = ()) -> Evidence:
    return Evidence(name, sum(folds) / len(folds), tuple(folds), kind, configs, families or (name,))  # type: ignore[arg-type]


TUNED = _e("lightgbm_tuned_bag2", [0.85, 0.82, 0.86, 0.83, 0.85], kind="tuned", configs=40, families=("lightgbm",))
FOREST = _e("random_forest", [0.84, 0.83, 0.84, 0.82, 0.83])
LINEAR = _e("linear", [0.80, 0.79, 0.81, 0.80, 0.78])


def test_within_noise_the_less_searched_candidate_is_chosen() -> None:
    choice = within_noise([LINEAR, FOREST, TUNED], higher=True)
    assert choice is not None and choice.leader == TUNED.name
    assert choice.rule == "within_noise" and choice.chosen == FOREST.name
    forest = next(m for m in choice.margins if m.name == FOREST.name)
    assert forest.within and forest.gain > 0 and forest.charge > 0
    assert "random_forest is within noise" in choice.reason
    # The linear model is clearly worse: never chosen, and its margin says so.
    assert not next(m for m in choice.margins if m.name == LINEAR.name).within
    assert max_cv([LINEAR, FOREST, TUNED], higher=True).chosen == TUNED.name  # type: ignore[union-attr]


def test_clearly_better_the_best_stands() -> None:
    best = _e("catboost", [0.90, 0.91, 0.89, 0.90, 0.92])
    other = _e("random_forest", [0.80, 0.81, 0.79, 0.80, 0.82])
    choice = within_noise([other, best], higher=True)
    assert choice is not None and choice.rule == "max_cv" and choice.chosen == "catboost"
    assert choice.reason == "no other candidate is within noise of the best CV"


def test_a_blend_of_several_families_goes_first_within_noise() -> None:
    blend = _e("blend", [0.848, 0.821, 0.855, 0.828, 0.848], kind="blend", families=("lightgbm", "random_forest"))
    choice = within_noise([FOREST, TUNED, blend], higher=True)
    assert choice is not None and choice.chosen == "blend" and "blend of several families" in choice.reason
    # Ranked like any candidate (search, then CV), a worse blend gives way to the forest.
    worse = _e("blend", [0.85, 0.80, 0.86, 0.83, 0.817], kind="blend", families=("lightgbm", "random_forest"))
    assert within_noise([FOREST, TUNED, worse], higher=True).chosen == "blend"  # type: ignore[union-attr]
    assert within_noise([FOREST, TUNED, worse], higher=True, blend_first=False).chosen == FOREST.name  # type: ignore[union-attr]


def test_paired_differences_not_raw_means() -> None:
    # Folds vary a lot, but the leader wins every fold by about 0.01: raw means look equal within
    # their spread, the paired differences do not.
    leader = _e("catboost", [0.70, 0.90, 0.80, 0.60, 0.85])
    follower = _e("random_forest", [0.689, 0.891, 0.790, 0.589, 0.841])
    m = margin(leader, follower, higher=True)
    assert m is not None and not m.within and m.gain > 0.008 and m.se < 0.001
    assert within_noise([follower, leader], higher=True).chosen == "catboost"  # type: ignore[union-attr]


def test_the_search_is_charged_and_lower_is_better_is_read_as_such() -> None:
    # Log losses (lower is better): the leader gains 0.004 per fold, 1.6 standard errors.
    plain = [0.400, 0.420, 0.380, 0.410, 0.390]
    follower = [0.410, 0.420, 0.390, 0.410, 0.390]
    untuned = within_noise([_e("linear", follower), _e("catboost", plain)], higher=False)
    assert untuned is not None and untuned.chosen == "catboost"  # no search to charge: it stands
    tuned = within_noise([_e("linear", follower), _e("catboost_tuned", plain, kind="tuned", configs=30)], higher=False)
    assert tuned is not None and tuned.chosen == "linear" and tuned.rule == "within_noise"
    assert expected_max(1) == 0.0 and 2.0 < expected_max(30) < 2.1


def test_the_constant_is_never_chosen_and_folds_must_pair() -> None:
    constant = _e("constant", [0.84, 0.83, 0.84, 0.82, 0.83], kind="constant")
    short = _e("extratrees", [0.84, 0.83])
    choice = within_noise([constant, short, TUNED], higher=True)
    assert choice is not None and choice.chosen == TUNED.name and choice.margins == []


def test_best_single_family_ignores_searches_bags_and_blends() -> None:
    bag = _e("random_forest_bag3", [0.86, 0.85, 0.86, 0.85, 0.86], kind="bag")
    assert best_single_family([LINEAR, FOREST, TUNED, bag], higher=True).chosen == FOREST.name  # type: ignore[union-attr]


def test_evidence_round_trips_through_json() -> None:
    assert Evidence.from_json(TUNED.to_json()) == TUNED
