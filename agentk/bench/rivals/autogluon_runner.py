"""AutoGluon side of rival (c). Runs under `.venv-autogluon`'s interpreter (`make autogluon`), never
ours: it imports nothing from agentk, only AutoGluon, pandas and numpy, and talks through files.

    <venv-autogluon>/bin/python autogluon_runner.py JOB.json

JOB.json (written by agentk.bench.rivals.autogluon_rival): train_csv, test_csv, train_id, test_id,
targets [{column, problem_type, eval_metric|null, log_target}], time_limit, presets, out_dir.
Writes out_dir/predictions.csv (`id`, per target `t` and, for classifiers, `t__proba__<j>` for the
j-th label of predictions.json's `classes`) and out_dir/predictions.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(job_path: str) -> int:
    import numpy as np
    import pandas as pd
    from autogluon.tabular import TabularPredictor

    job = json.loads(Path(job_path).read_text())
    out = Path(job["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    target_names = [t["column"] for t in job["targets"]]
    classifiers = [t["column"] for t in job["targets"] if t["problem_type"] != "regression"]
    # Labels as the file's text, so they match agentk's classes exactly ("0", "True", "Acer_Opalinum").
    train = pd.read_csv(job["train_csv"], dtype={job["train_id"]: str, **{c: str for c in classifiers}})
    test = pd.read_csv(job["test_csv"], dtype={job["test_id"]: str})
    test_ids = test[job["test_id"]].astype(str).str.strip()
    # Raw table, id dropped; only columns the test also has can be used to predict.
    features = [c for c in train.columns if c not in target_names and c != job["train_id"] and c in test.columns and c != job["test_id"]]
    predictions = pd.DataFrame({"id": test_ids.to_numpy()})
    meta: dict = {"targets": {}, "features": len(features)}
    remaining = float(job["time_limit"])
    for n, target in enumerate(job["targets"]):
        label = target["column"]
        data = train[features + [label]].dropna(subset=[label]).reset_index(drop=True)
        if target["log_target"]:
            data[label] = np.log1p(data[label].astype(float))
        # Several targets share the budget; each gets an equal part of what is left.
        budget = max(10.0, remaining / (len(job["targets"]) - n))
        target_started = time.monotonic()
        predictor = TabularPredictor(
            label=label, problem_type=target["problem_type"], eval_metric=target["eval_metric"],
            path=str(out / "models" / f"target{n}"), verbosity=1,
        )
        predictor.fit(data, presets=job["presets"], time_limit=budget)
        remaining -= time.monotonic() - target_started
        X_test = test[features]
        entry: dict = {"eval_metric": predictor.eval_metric.name, "best_model": predictor.model_best,
                       "fit_s": round(time.monotonic() - target_started, 2)}
        if target["problem_type"] == "regression":
            values = np.asarray(predictor.predict(X_test), dtype=float)
            if target["log_target"]:
                values = np.clip(np.expm1(values), 0.0, None)
            predictions[label] = values
        else:
            proba = predictor.predict_proba(X_test, as_multiclass=True)
            classes = [str(c) for c in proba.columns]
            entry["classes"] = classes
            predictions[label] = proba.idxmax(axis=1).astype(str).to_numpy()
            for j, column in enumerate(proba.columns):
                predictions[f"{label}__proba__{j}"] = proba[column].to_numpy(dtype=float)
        meta["targets"][label] = entry
    meta["seconds"] = round(time.monotonic() - started, 2)
    predictions.to_csv(out / "predictions.csv", index=False)
    (out / "predictions.json").write_text(json.dumps(meta, indent=2))
    print(json.dumps({"event": "done", **meta}), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
