"""The solve's last step: the predictor of the submission it leaves (`solve/predictor/`), checked
on the run's own test rows before it is kept.

The check replays the submission's whole recipe on the test maps the run read (its first
CHECK_ROWS rows, CHECK_PICTURE_ROWS where pictures are embedded again), by the predictor's own path
(Predictor.rows, the replays), and keeps the predictor only when every target's test predictions
come out as the solve's own (to PREDICTIONS_TOLERANCE, or PICTURES_TOLERANCE). Where the
submission cannot be replayed (sound, fine-tuned image nets, the fusion net, a model whose fitted
maps were not kept, an earlier solve's file), the record says why and `agentk export` repeats it.
"""

from __future__ import annotations

import json
import math
import pickle
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agentk.core.predictor_layout import PredictorLayout
from agentk.core.records.workspace import atomic_write_json, replacing
from solve_pipeline.base.cv import emit
from solve_pipeline.base.submission_record import file_sha256
from solve_pipeline.export.predictor import Predictor
from solve_pipeline.images.image_features import PictureFiles

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

PREDICTIONS_TOLERANCE = 1e-9
# Pictures are embedded again in float32 by a network of ~100 layers, in other batches than the
# run's (its test pictures were batched with train ones, or read from its cache) and on other
# threads: the kernels a batch's shape and the thread count select sum in another order, ~1e-6
# relative in each pooled feature. Standardized and summed over a couple of thousand features by
# the heads, that moves a probability by ~1e-5 at most (on one machine the replay came out exactly
# the run's); a recipe that is wrong (another network, resolution, mirror or scaler) moves it by
# 1e-2 and more.
PICTURES_TOLERANCE = 1e-4
# The check's rows: the first test rows, enough to meet every step of the recipe, few enough that
# the check costs seconds past the budget on any test set (each row is encoded on its own).
CHECK_ROWS = 5000
# Each picture costs a forward pass again (20-60 ms on a CPU): a sample that meets every step.
CHECK_PICTURE_ROWS = 200
REPLAYED_MAPS = ("tab", "txt", "img")  # in MAP_CODES order: the first present names the test ids


def save(predictor: Predictor, path: Path) -> None:
    """Pickled whole or not at all (a model that cannot be pickled leaves no half file)."""
    with replacing(path) as tmp, open(tmp, "wb") as handle:
        pickle.dump(predictor, handle, protocol=5)


def _why_not(solver: Solver) -> str | None:
    """Why the submission cannot be replayed on unseen rows; None when it can."""
    state, features = solver.state, solver.ctx.features
    if state.kept is not None:
        return "the submission on disk is an earlier solve's file, whose models this solve does not hold"
    if not state.best or state.submission_path is None:
        return "the solve wrote no submission"
    other = sorted(set(solver.artifacts.test_maps) - set(REPLAYED_MAPS))
    if other:
        return f"the setup also maps {', '.join(other)} inputs: exports replay tables, texts and images only for now"
    if features.table is None and features.text_recipe is None and features.image_paths_test is None:
        return "the setup writes no tabular, text or image map"
    made = _pictures_made_at_setup(features.image_paths_test or {}, solver.artifacts.setup_dir)
    if made:
        return (f"the test pictures were unpacked into the setup folder (e.g. {made}): the setup's test-map code "
                "names them but does not make them again, so new test files cannot be replayed yet")
    if solver.ctx.forecast is not None:
        return "forecast features read the training targets of each series: not replayed yet"
    if not solver.ctx.keep_models:
        return "fold models are not kept on big tables (their memory)"
    for target, prediction in state.best.items():
        if prediction.replay is None:
            return f"{target}: the solution {prediction.model!r} keeps no fitted maps or fold models to replay"
    return None


def _pictures_made_at_setup(paths: dict[str, list[str]], setup: Path) -> str | None:
    """A test picture the setup stages wrote into setup/ (pictures unpacked from stacked arrays),
    which replaying the test-map code on new files does not write again; None when all are the data's."""
    inside = setup.resolve()
    for column in paths.values():
        for path in column:
            if path and inside in Path(path).resolve().parents:
                return str(Path(path).resolve().relative_to(inside))
    return None


def _predictor(solver: Solver) -> Predictor:
    best, features = solver.state.best, solver.ctx.features
    return Predictor(
        targets=list(solver.ctx.targets),
        replays={t: p.replay for t, p in best.items()},  # type: ignore[misc]
        decoders={t: p.decoder for t, p in best.items()},
        models={t: p.model for t, p in best.items()},
        table=features.table,
        text=features.text_recipe,
        tab_names=list(features.tab_names),
        maps=[code for code in REPLAYED_MAPS if code in solver.artifacts.test_maps],
        pictures=None if features.image_paths_test is None else PictureFiles(
            tuple(features.image_paths_test), None if features.image_shape is None else features.image_shape[1]),
    )


def _check_rows(predictor: Predictor) -> int:
    return CHECK_ROWS if predictor.pictures is None else CHECK_PICTURE_ROWS


def _tolerance(predictor: Predictor) -> float:
    return PREDICTIONS_TOLERANCE if predictor.pictures is None else PICTURES_TOLERANCE


def _check(predictor: Predictor, solver: Solver) -> float:
    """The largest difference between the replayed test predictions and the solve's own."""
    ids = list(solver.ctx.features.test_ids)[:_check_rows(predictor)]
    replayed = predictor.predictions(solver.artifacts.test_maps, ids, solver.artifacts.setup_dir)
    worst = 0.0
    for target, prediction in solver.state.best.items():
        own = np.asarray(prediction.test, dtype=np.float64)[: len(ids)]
        again = np.asarray(replayed[target].test, dtype=np.float64)
        if own.shape != again.shape:
            return math.inf
        if own.size:
            worst = max(worst, float(np.nanmax(np.abs(own - again))))
    return worst


def save_predictor(solver: Solver) -> dict[str, Any]:
    """Write (or refuse, with the reason) the predictor of the solve's submission; returns its record."""
    layout = PredictorLayout.in_workspace(solver.artifacts.workspace)
    layout.dir.mkdir(parents=True, exist_ok=True)
    layout.model.unlink(missing_ok=True)  # a stale predictor must never pass for this submission's
    record: dict[str, Any] = {"format": PredictorLayout.FORMAT, "exportable": False}
    reason = _why_not(solver)
    if reason is None:
        try:
            predictor = _predictor(solver)
            worst = _check(predictor, solver)
            tolerance = _tolerance(predictor)
            record["check"] = {"rows": min(solver.ctx.features.n_test, _check_rows(predictor)),
                               "max_abs_diff": worst, "tolerance": tolerance}
            if not worst <= tolerance:
                reason = f"replaying the run's own test rows differs from its predictions by {worst:.3g}"
            else:
                save(predictor, layout.model)
        except Exception as error:  # noqa: BLE001 - an export is a bonus: the submission stands without it
            reason = f"the predictor could not be replayed: {type(error).__name__}: {error}"
    if reason is None:
        assert solver.state.submission_path is not None
        record.update({
            "exportable": True,
            "submission_sha256": file_sha256(solver.state.submission_path),
            "predictor_sha256": file_sha256(layout.model),
            "models": {t: p.model for t, p in solver.state.best.items()},
            "maps": [code for code in REPLAYED_MAPS if code in solver.artifacts.test_maps],
            "python": platform.python_version(),
        })
    else:
        record["reason"] = reason
    atomic_write_json(layout.record, record)
    emit("predictor", **{k: v for k, v in record.items() if k in ("exportable", "reason", "check")})
    return record


def read_record(workspace: Path) -> dict[str, Any] | None:
    """The predictor's record in a workspace; None when the solve left none."""
    path = PredictorLayout.in_workspace(workspace).record
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None
