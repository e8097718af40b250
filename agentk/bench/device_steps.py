"""The solver's torch steps timed on each device, side by side: how much a GPU buys.

    python -m agentk.bench.device_steps images DIR   [--devices cuda,cpu] [--folds 3] [--out F]
    python -m agentk.bench.device_steps text CSV --text COL --target COL [...]

`images` reads a folder of class folders (DIR/<label>/*.jpg); `text` a CSV. Each device runs
the same steps through the solver's own code (solve_pipeline/networks/device.py picks the device): for
images the frozen trunk maps and the last block's fine-tuning, for text the MiniLM embeddings and
MiniLM fine-tuning, each fine-tuning under K-fold CV with its out-of-fold score. A slow device can
be limited to its first fold (`--cpu-folds`), so the ratio is per fold. JSON goes to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentk.core.predictions import TargetSpec

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def _timed(step: Callable[[], Any]) -> tuple[Any, float]:
    began = time.monotonic()
    value = step()
    return value, round(time.monotonic() - began, 3)


def _folds(y: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    return list(StratifiedKFold(k, shuffle=True, random_state=0).split(np.zeros(len(y)), y))


def _cv(make_model: Callable[[], Any], X: Any, y: np.ndarray, folds: list, score: Callable) -> dict[str, Any]:
    """Fits per fold (seconds, epochs, best epoch) and the out-of-fold score of the folds run."""
    oof = np.full(len(y), -1)
    runs = []
    for train, valid in folds:
        model = make_model()
        _, seconds = _timed(lambda model=model, train=train, valid=valid: model.fit(
            X[train], y[train], X_val=X[valid], y_val=y[valid]))
        oof[valid] = model.predict(X[valid])
        runs.append({"seconds": seconds, "epochs": model.epochs_run_, "best_epoch": model.best_epoch_,
                     "device": str(model.device_)})
    done = oof >= 0
    return {"folds": runs, "fold_seconds": round(float(np.mean([r["seconds"] for r in runs])), 3),
            "score": round(float(score(y[done], oof[done])), 5), "rows_scored": int(done.sum())}


def image_steps(root: Path, folds: int, threads: int, max_epochs: int) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score

    from solve_pipeline.networks import device
    from solve_pipeline.images.image_embedding import plan_embedding
    from solve_pipeline.images.image_finetune import ImageFinetuneModel
    from solve_pipeline.images.image_maps import FinetuneInputs, trunk_maps

    labels = sorted(p.name for p in root.iterdir() if p.is_dir())
    paths, y = [], []
    for index, label in enumerate(labels):
        files = sorted(p for p in (root / label).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        paths += [str(p) for p in files]
        y += [index] * len(files)
    y_arr = np.asarray(y)
    plans, why = plan_embedding(paths, seconds=1e6, threads=threads)
    if not plans:
        raise SystemExit(f"error: no image plan: {why}")
    plan = plans[0]
    maps, maps_s = _timed(lambda: trunk_maps(paths, plan, threads=threads))
    X = FinetuneInputs(maps, plan.backbone, 1)
    spec = TargetSpec(column="label", task="multiclass", classes=labels)
    from solve_pipeline.base.baseline_models import ModelOptions

    cv = _cv(lambda: ImageFinetuneModel(spec, ModelOptions(threads=threads), {"max_epochs": max_epochs}),
             X, y_arr, _folds(y_arr, 3)[:folds], accuracy_score)
    return {"rows": len(paths), "plan": plan.label, "maps_s": maps_s, "finetune": cv, "metric": "accuracy",
            "device": device.summary()}


def text_steps(csv: Path, text: str, target: str, folds: int, threads: int, max_epochs: int) -> dict[str, Any]:
    import pandas as pd
    from sklearn.metrics import f1_score

    from solve_pipeline.networks import device
    from solve_pipeline.base.baseline_models import ModelOptions
    from solve_pipeline.texts.text_embedding import embed_texts
    from solve_pipeline.texts.text_finetune import MiniLMFineTuneModel
    from solve_pipeline.texts.text_tokens import TextInputs

    frame = pd.read_csv(csv)
    texts = frame[text].fillna("").astype(str).to_numpy(dtype=object)
    classes = sorted(frame[target].unique().tolist())
    y = frame[target].map({c: i for i, c in enumerate(classes)}).to_numpy()
    vectors, embed_s = _timed(lambda: embed_texts(list(texts), max_seconds=1e6, threads=threads))
    spec = TargetSpec(column=target, task="binary" if len(classes) == 2 else "multiclass", classes=classes)
    scorer = (lambda a, b: f1_score(a, b)) if len(classes) == 2 else (lambda a, b: f1_score(a, b, average="macro"))
    cv = _cv(lambda: MiniLMFineTuneModel(spec, ModelOptions(threads=threads), {"max_epochs": max_epochs}),
             TextInputs(texts), y, _folds(y, 3)[:folds], scorer)
    return {"rows": len(y), "embed_s": embed_s, "embedded": vectors is not None, "finetune": cv,
            "metric": "f1", "device": device.summary()}


def oom_check(csv: Path, text: str, target: str, threads: int, keep_free_mb: int = 40) -> dict[str, Any]:
    """A real out-of-memory on the GPU: all but `keep_free_mb` of its memory taken, then a short
    MiniLM fine-tuning; the record shows the halvings, the move to the CPU, and the fit."""
    import pandas as pd
    import torch

    from solve_pipeline.networks import device
    from solve_pipeline.base.baseline_models import ModelOptions
    from solve_pipeline.texts.text_finetune import MiniLMFineTuneModel
    from solve_pipeline.texts.text_tokens import TextInputs

    device.configure("cuda")
    frame = pd.read_csv(csv).head(256)
    classes = sorted(frame[target].unique().tolist())
    y = frame[target].map({c: i for i, c in enumerate(classes)}).to_numpy()
    free, _ = torch.cuda.mem_get_info()
    filler = torch.empty(max(0, free - keep_free_mb * 2**20), dtype=torch.uint8, device="cuda")
    try:
        model = MiniLMFineTuneModel(TargetSpec(column=target, task="binary", classes=classes),
                                    ModelOptions(threads=threads), {"max_epochs": 1})
        model.fit(TextInputs(frame[text].fillna("").astype(str).to_numpy(dtype=object)), y)
        fitted_on = str(model.device_)
    finally:
        del filler
        torch.cuda.empty_cache()
    return {"fitted_on": fitted_on, "device": device.summary()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentk.bench.device_steps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["images", "text"])
    parser.add_argument("source", type=Path)
    parser.add_argument("--text")
    parser.add_argument("--target")
    parser.add_argument("--devices", default="cuda,cpu")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--cpu-folds", type=int, default=1, help="folds the CPU runs (its timing is per fold)")
    parser.add_argument("--epochs", type=int, default=None, help="most epochs (default: 15 images, 3 text)")
    parser.add_argument("--cpu-epochs", type=int, default=None)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--oom-check", action="store_true", help="text, with a GPU: fill its memory, then fit")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from solve_pipeline.networks import device

    report: dict[str, Any] = {"kind": args.kind, "source": str(args.source), "threads": args.threads, "runs": {}}
    if args.oom_check:
        report["oom_check"] = oom_check(args.source, args.text, args.target, args.threads)
        print(json.dumps({"oom_check": report["oom_check"]}), flush=True)
    for name in args.devices.split(","):
        device.configure(name)
        on_cpu = device.current().type == "cpu"
        folds = args.cpu_folds if on_cpu else args.folds
        epochs = (args.cpu_epochs if on_cpu and args.cpu_epochs else args.epochs) or (15 if args.kind == "images" else 3)
        if args.kind == "images":
            run = image_steps(args.source, folds, args.threads, epochs)
        else:
            if not args.text or not args.target:
                parser.error("text needs --text and --target")
            run = text_steps(args.source, args.text, args.target, folds, args.threads, epochs)
        report["runs"][name] = {**run, "epochs_allowed": epochs}
        print(json.dumps({name: run}), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
