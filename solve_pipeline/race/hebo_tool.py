"""The HEBO tool (Agent K, Table 5): Bayesian hyperparameter tuning of a training function.

`tune` drives HEBO's suggest/observe loop over a search space. The objective is any callable
`params -> score`; a failing trial (exception or non-finite score) is recorded and fed back to
HEBO as a bad value so tuning carries on. What to tune (each family's space and defaults) is
solve_pipeline.race.registry's to say. `pip install .` alone leaves hebo out: `hebo_missing` says so,
and the solver then skips tuning.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, model_validator

from agentk.core.metrics.direction import Direction

ParamKind = Literal["num", "pow", "int", "cat", "bool"]


class SearchParam(BaseModel):
    """One dimension of the search space, in HEBO's vocabulary (`pow` = log-uniform)."""

    name: str
    kind: ParamKind
    lb: float | None = None
    ub: float | None = None
    categories: list[str] | None = None

    @model_validator(mode="after")
    def _check_bounds(self) -> SearchParam:
        if self.kind in ("num", "pow", "int"):
            if self.lb is None or self.ub is None or not self.lb < self.ub:
                raise ValueError(f"{self.name}: {self.kind} needs lb < ub")
            if self.kind == "pow" and self.lb <= 0:
                raise ValueError(f"{self.name}: pow needs lb > 0")
        if self.kind == "cat" and not self.categories:
            raise ValueError(f"{self.name}: cat needs categories")
        return self

    def to_hebo(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": self.name, "type": self.kind}
        if self.kind in ("num", "pow"):
            spec.update(lb=float(self.lb), ub=float(self.ub))
        elif self.kind == "int":
            spec.update(lb=int(self.lb), ub=int(self.ub))
        elif self.kind == "cat":
            spec["categories"] = list(self.categories)
        return spec

    def to_python(self, value: Any) -> Any:
        """HEBO hands back numpy scalars; objectives (and JSON logs) want plain Python values."""
        if self.kind == "int":
            return round(float(value))
        if self.kind == "bool":
            return bool(value)
        if self.kind == "cat":
            return str(value)
        return float(value)


class HeboConfig(BaseModel):
    n_trials: int = Field(20, ge=1)
    max_time_s: float | None = None  # whole-tuning budget; checked before each new trial
    seed: int = 0
    # HEBO's GP often fails to fit (NaN Cholesky) on fewer than ~5 points, so warm up randomly.
    n_initial: int = Field(5, ge=2)
    higher_is_better: bool
    # Stop once this many new trials in a row have not beaten the best (None: never): the search
    # has plateaued, and the time is better spent elsewhere (another family, bagging).
    patience: int | None = Field(None, ge=1)


@dataclass
class Trial:
    params: dict[str, Any]
    score: float | None
    seconds: float
    error: str | None = None


@dataclass
class TuningResult:
    best_params: dict[str, Any] | None
    best_score: float | None
    trials: list[Trial] = field(default_factory=list)
    stopped: str | None = None  # why it ended before n_trials, when it did


def _design_space(space: list[SearchParam]) -> Any:
    from hebo.design_space.design_space import DesignSpace

    names = [p.name for p in space]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate parameter names: {names}")
    return DesignSpace().parse([p.to_hebo() for p in space])


def _quiet() -> contextlib.ExitStack:
    """HEBO prints 'jitter = ...' on every failed GP step and pymoo warns about compilation."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    return stack


# pip cannot install hebo beside agentk with its declared dependencies (numpy<1.25, GPy), so
# `pip install .` leaves it out and the solver runs without tuning; see the README.
HEBO_INSTALL = 'pip install "agentk[hebo]" && pip install --no-deps hebo==0.3.6'


def hebo_missing() -> str | None:
    """Why HEBO cannot run here (it, or one of its own imports, is not installed), or None."""
    try:
        with _quiet():  # pymoo prints a "not compiled" notice on import
            import hebo.optimizers.hebo  # noqa: F401
    except ImportError as error:
        return f"HEBO is not installed ({error}); to tune: {HEBO_INSTALL}"
    return None


SUGGEST_GUESS_S = 10.0  # a model-based suggest's cost until one is measured (2-12 s on 2 busy cores)


def suggest_cost(measured: float | None) -> float:
    return SUGGEST_GUESS_S if measured is None else measured


def tune(objective: Callable[[dict[str, Any]], float], space: list[SearchParam],
         config: HeboConfig, on_trial: Callable[[Trial], None] | None = None,
         known: list[Trial] | None = None, first: list[dict[str, Any]] | None = None) -> TuningResult:
    """Run up to `config.n_trials` trials of `objective`, stopping early when the time is spent.

    At least one trial always runs, so a result exists whenever the objective can succeed.
    `known` trials (already evaluated elsewhere, e.g. library defaults) are observed first, so
    HEBO's model starts from them; they are part of the result but not re-run. `first` points
    (inside the space, every parameter given: e.g. a warm start's configurations) are the first
    new trials, run and observed like HEBO's own suggestions before HEBO suggests any.
    """
    import torch

    # HEBO's GP fitting and acquisition optimiser draw from the global numpy/torch RNGs: seed
    # them for reproducibility, and give the caller's RNG state back afterwards.
    np_state, torch_state = np.random.get_state(), torch.get_rng_state()
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    try:
        return _tune(objective, space, config, on_trial, known or [], list(first or []))
    finally:
        np.random.set_state(np_state)
        torch.set_rng_state(torch_state)


def _tune(objective: Callable[[dict[str, Any]], float], space: list[SearchParam],
          config: HeboConfig, on_trial: Callable[[Trial], None] | None,
          known: list[Trial], first: list[dict[str, Any]]) -> TuningResult:
    by_name = {p.name: p for p in space}
    with _quiet():  # pymoo prints a "not compiled" notice on import
        from hebo.optimizers.hebo import HEBO

        optimizer = HEBO(_design_space(space), rand_sample=config.n_initial,
                         scramble_seed=config.seed)
    sign = -1.0 if config.higher_is_better else 1.0  # HEBO minimises
    trials: list[Trial] = []
    finite_losses: list[float] = []
    pending_failures: list[pd.DataFrame] = []
    start = time.monotonic()
    for trial in known:
        if trial.error is not None or trial.score is None or not math.isfinite(trial.score):
            continue
        point = pd.DataFrame([{p.name: trial.params[p.name] for p in space}])
        loss = sign * float(trial.score)
        with _quiet():
            optimizer.observe(point, np.array([[loss]]))
        finite_losses.append(loss)
        trials.append(trial)
    n_known = len(trials)

    # A model-based suggest (GP fit + acquisition search) measured 2-12 s on a busy 2-core
    # machine: a new trial starts only when its suggest and a typical trial, at the pace seen
    # so far, still fit the time left (the first new trial always runs).
    suggest_s: float | None = None  # the dearest model-based suggest so far
    trial_s = [t.seconds for t in trials]
    direction = Direction(config.higher_is_better)
    best_known = direction.best_score(t.score for t in trials)
    best_known = math.nan if best_known is None else best_known
    since_best = 0
    stopped: str | None = None
    for _ in range(config.n_trials):
        if config.patience is not None and since_best >= config.patience:
            stopped = f"no gain in the last {since_best} trials (plateau)"
            break
        queued = bool(first)  # a given point costs no suggest
        if len(trials) > n_known and config.max_time_s is not None:
            spent = time.monotonic() - start
            model_based = optimizer.X.shape[0] >= config.n_initial and not queued
            upcoming = suggest_cost(suggest_s) if model_based else 0.0
            upcoming += float(np.median(trial_s)) if trial_s else 0.0
            if spent + upcoming >= config.max_time_s:
                # A trial may still fit without the model's suggest: a random point instead.
                if not model_based or spent + upcoming - suggest_cost(suggest_s) >= config.max_time_s:
                    stopped = "time"
                    break
                suggestion = optimizer.space.sample(1)
            else:
                suggestion = None
        else:
            suggestion = None
        if queued and suggestion is None:
            point = first.pop(0)
            suggestion = pd.DataFrame([{p.name: point[p.name] for p in space}])
        began = time.monotonic()
        model_based = optimizer.X.shape[0] >= config.n_initial and suggestion is None
        if suggestion is None:
            suggestion = _suggest(optimizer)
        if model_based:
            suggest_s = max(suggest_s or 0.0, time.monotonic() - began)
        row = suggestion.iloc[0].to_dict()
        params = {name: by_name[name].to_python(value) for name, value in row.items()}
        trial = _run_trial(objective, params)
        trials.append(trial)
        trial_s.append(trial.seconds)
        if trial.error is None and direction.better(float(trial.score), best_known):
            best_known, since_best = float(trial.score), 0
        else:
            since_best += 1
        if trial.error is None:
            loss = sign * float(trial.score)
            finite_losses.append(loss)
            with _quiet():
                optimizer.observe(suggestion, np.array([[loss]]))
            # Failures seen before any success get their penalty now that a scale exists.
            for failed in pending_failures:
                _observe_failure(optimizer, failed, finite_losses)
            pending_failures.clear()
        elif finite_losses:
            _observe_failure(optimizer, suggestion, finite_losses)
        else:
            pending_failures.append(suggestion)
        if on_trial is not None:
            on_trial(trial)

    result = _result(trials, config.higher_is_better)
    result.stopped = stopped
    return result


def _suggest(optimizer: Any) -> pd.DataFrame:
    with _quiet():
        try:
            return optimizer.suggest(n_suggestions=1)
        except Exception:  # noqa: BLE001 -- a surrogate failure costs one guided step, not the run
            return optimizer.space.sample(1)


def _run_trial(objective: Callable[[dict[str, Any]], float], params: dict[str, Any]) -> Trial:
    began = time.monotonic()
    try:
        score = float(objective(dict(params)))
    except Exception as exc:  # noqa: BLE001 -- a bad configuration must not end the tuning
        return Trial(params, None, time.monotonic() - began, f"{type(exc).__name__}: {exc}")
    seconds = time.monotonic() - began
    if not math.isfinite(score):
        return Trial(params, None, seconds, f"non-finite score {score}")
    return Trial(params, score, seconds, None)


def _observe_failure(optimizer: Any, suggestion: pd.DataFrame, losses: list[float]) -> None:
    # HEBO drops non-finite y, so a failure is the worst loss plus a spread: clearly bad but
    # not so extreme that the output warping squashes every real observation together.
    spread = max(max(losses) - min(losses), abs(max(losses)) * 0.1, 1e-3)
    with _quiet():
        optimizer.observe(suggestion, np.array([[max(losses) + spread]]))


def _result(trials: list[Trial], higher_is_better: bool) -> TuningResult:
    scored = [t for t in trials if t.error is None]
    if not scored:
        return TuningResult(None, None, trials)
    best = Direction(higher_is_better).best(scored, key=lambda t: t.score)
    if best is None:
        return TuningResult(None, None, trials)
    return TuningResult(dict(best.params), best.score, trials)

