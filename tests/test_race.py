"""The race's guarantees on a real (titanic) CV context: the first family that can build its
features sets the pace and always finishes; a survivor the deadline stops is revived later."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from solve_pipeline.race.automl import race, revive
from solve_pipeline.base.baseline_models import ConstantModel, ModelCandidate
from solve_pipeline.race.registry import family_candidate
from solve_pipeline.inputs.solve_inputs import SolveOptions, prepare
from solver_workspaces import titanic_workspace

pytestmark = pytest.mark.integration


class SlowConstant(ConstantModel):
    """Class frequencies that take seconds to fit: a family the race's deadline can catch."""

    def fit(self, X: np.ndarray, y: np.ndarray, **_: object) -> SlowConstant:
        time.sleep(2.5)
        return super().fit(X, y)


def _context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)  # prepare() moves into setup/, as the solver subprocess does
    _, ctx, _, _ = prepare(SolveOptions(workspace=titanic_workspace(tmp_path / "titanic"), folds=3))
    return ctx


def test_a_family_without_features_passes_the_pace_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _context(tmp_path, monkeypatch)
    linear, lightgbm = family_candidate("linear"), family_candidate("lightgbm")
    nothing = ModelCandidate("no_backbone", lambda features, seed: None, lambda s, o, f: ConstantModel(s))
    finished: list[str] = []
    now = time.monotonic()
    # The race's own deadline is already spent: only the pace-setter may still run.
    outcome = race([nothing, linear, lightgbm], ctx, now - 1, True, lambda run: finished.append(run.name),
                   hard_deadline=now + 120)
    entries = {e.family: e for e in outcome.entries}
    assert entries["no_backbone"].reason == "no usable features"
    assert entries["linear"].status == "finished" and finished == ["linear"]
    assert entries["lightgbm"].status == "out_of_time"
    # A family the race never started gets its turn when time is left after the race.
    assert [c.name for c in outcome.unstarted] == ["lightgbm"]
    revive(outcome, ctx, time.monotonic() + 60, lambda run: finished.append(run.name))
    assert finished == ["linear", "lightgbm"] and entries["lightgbm"].status == "finished"
    assert entries["lightgbm"].first_fold_score is not None


def test_a_survivor_stopped_by_the_deadline_is_revived(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _context(tmp_path, monkeypatch)
    linear = family_candidate("linear")
    slow = ModelCandidate("slow", linear.matrices, lambda s, o, f: SlowConstant(s))
    finished: list[str] = []
    outcome = race([linear, slow], ctx, time.monotonic() + 3, True, lambda run: finished.append(run.name))
    entries = {e.family: e for e in outcome.entries}
    assert entries["slow"].status == "out_of_time" and entries["slow"].first_fold_score is not None
    assert [run.name for run in outcome.pruned] == ["slow"]
    revive(outcome, ctx, time.monotonic() + 60, lambda run: finished.append(run.name))
    assert finished == ["linear", "slow"] and entries["slow"].status == "finished"


def test_a_big_table_gets_fewer_folds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The big-data switch forced on titanic: 3 folds whatever was asked (5 here)."""
    import solve_pipeline.base.dataset as dataset

    monkeypatch.setattr(dataset, "BIG_ROWS", 100)
    monkeypatch.chdir(tmp_path)
    _, ctx, _, _ = prepare(SolveOptions(workspace=titanic_workspace(tmp_path / "titanic"), folds=5))
    assert ctx.features.big and len(ctx.folds) == 3
    assert sorted(np.concatenate([valid for _, valid in ctx.folds]).tolist()) == list(range(ctx.features.n_train))


def test_survivors_stopped_by_the_deadline_finish_before_tuning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from solve_pipeline.race.automl import finish_survivors

    ctx = _context(tmp_path, monkeypatch)
    linear = family_candidate("linear")
    slow = ModelCandidate("slow", linear.matrices, lambda s, o, f: SlowConstant(s))
    finished: list[str] = []
    outcome = race([linear, slow], ctx, time.monotonic() + 3, True, lambda run: finished.append(run.name))
    assert [run.name for run in outcome.pruned] == ["slow"]  # a survivor the deadline stopped
    finish_survivors(outcome, ctx, time.monotonic() + 60, lambda run: finished.append(run.name))
    assert finished == ["linear", "slow"] and outcome.pruned == []
    assert {e.family: e.status for e in outcome.entries}["slow"] == "finished"


def test_the_pace_setter_runs_when_features_took_the_whole_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Featurising ate the budget (a loaded machine, a tiny budget): the first family still
    finishes, past the end, rather than leaving the constant as the submission."""
    ctx = _context(tmp_path, monkeypatch)
    finished: list[str] = []
    now = time.monotonic()
    outcome = race([family_candidate("linear"), family_candidate("lightgbm")], ctx, now - 2, True,
                   lambda run: finished.append(run.name), hard_deadline=now - 1)
    status = {e.family: e.status for e in outcome.entries}
    assert finished == ["linear"] and status == {"linear": "finished", "lightgbm": "out_of_time"}


class CountedSlowConstant(SlowConstant):
    fits = 0

    def fit(self, X: np.ndarray, y: np.ndarray, **kwargs: object) -> CountedSlowConstant:
        CountedSlowConstant.fits += 1
        return super().fit(X, y, **kwargs)


def test_a_family_revived_unstarted_stops_between_its_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four targets (titanic's, repeated), 2.5 s a fit, 6 s left: revive starts the never-raced
    family, and gives up its first fold once the deadline passes, not after every target (one
    linear fit per keypoint, 16 of them, once ran a solve minutes past its budget)."""
    from dataclasses import replace

    from solve_pipeline.race.automl import RaceEntry, RaceOutcome

    ctx = _context(tmp_path, monkeypatch)
    first = ctx.targets[0]
    copies = [replace(first, column=f"{first.column}_{i}") for i in range(3)]
    monkeypatch.setattr(ctx.artifacts, "targets", [first, *copies])
    ctx.y.update({spec.column: ctx.y[first.column] for spec in copies})
    slow = ModelCandidate("slow", family_candidate("linear").matrices, lambda s, o, f: CountedSlowConstant(s))
    outcome = RaceOutcome([RaceEntry("slow", "out_of_time")], [], [slow])
    finished: list[str] = []
    revive(outcome, ctx, time.monotonic() + 6, lambda run: finished.append(run.name))
    assert finished == [] and outcome.entries[0].status == "out_of_time", outcome.entries
    assert CountedSlowConstant.fits < 4 and "targets of fold 0" in (outcome.entries[0].reason or "")
