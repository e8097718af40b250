"""Run in the sandbox by the maps meta check: load the maps and stack one batch of rows as the networks read them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.pixels.target import picture_target

# Each kind's modules are imported in the branch that reads it: a table's probe has no use for the
# pixel model's scipy.ndimage nor for the masks' readers.


# Loading every map already proves they parse; the batch itself needs only a few rows, and
# featurising all of them (TF-IDF over 20,000 texts) cost 20 s of setup per run.
PROBE_ROWS = 256


def _picture_batch(artifacts: SetupArtifacts, target: dict) -> dict:
    """A picture target's batch: one training pair's pixels as the pixel model reads them."""
    from agentk.core.mask_targets import MASK_TASK, read_labels
    from agentk.core.pixels import read_picture, resolve
    from solve_pipeline.pixels.features import pixel_features

    first = artifacts.train_maps["img"].iloc[0]
    truth = artifacts.target_map.set_index("id").loc[first["id"], target["column"]]
    features = pixel_features(read_picture(resolve(artifacts.setup_dir, first["image_path"])))
    if target.get("task") == MASK_TASK:
        picture = read_labels(resolve(artifacts.setup_dir, truth))
    else:
        picture = read_picture(resolve(artifacts.setup_dir, truth))
    return {"features": features[:16], "target": picture.ravel()[:16]}


def main(workspace: str) -> None:
    artifacts = SetupArtifacts.load(Path(workspace))
    target = picture_target(artifacts.setup_dir)
    if target is not None:
        batch = _picture_batch(artifacts, target)
        print(json.dumps({"rows": len(batch["target"]), "shapes": {k: list(v.shape) for k, v in batch.items()}}))
        return
    from solve_pipeline.inputs.features import build_features
    from solve_pipeline.networks.batches import first_batch

    # Test rows too: decoding every test clip (tens of thousands of sound files) is the solve's work.
    features = build_features(artifacts, train_ids=list(artifacts.train_ids)[:PROBE_ROWS],
                              test_ids=list(artifacts.test_ids)[:PROBE_ROWS])
    batch = first_batch(features, batch_size=16)
    shapes = {key: list(getattr(value, "shape", [len(value)])) for key, value in batch.items()}
    rows = max((shape[0] for shape in shapes.values() if shape), default=0)
    print(json.dumps({"rows": rows, "shapes": shapes}))


if __name__ == "__main__":
    from agentk.core.process_exit import exit_now

    main(sys.argv[1])
    exit_now(0)
