"""Run in the sandbox by the maps meta check: load the maps and pull one batch from a DataLoader."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from solve_pipeline.batches import iterate_batches
from solve_pipeline.features import build_features
from solve_pipeline.setup_modules import SetupArtifacts


def main(workspace: str) -> None:
    artifacts = SetupArtifacts.load(Path(workspace))
    features = build_features(artifacts)
    batch = next(iter(iterate_batches(features, batch_size=16)))
    shapes = {key: list(getattr(value, "shape", [len(value)])) for key, value in batch.items()}
    rows = max((shape[0] for shape in shapes.values() if shape), default=0)
    print(json.dumps({"rows": rows, "shapes": shapes}))


if __name__ == "__main__":
    main(sys.argv[1])
