"""Which training windows a windowed sound task (`agentk.core.sound_windows`) can afford to read.

BirdCLEF's training set holds tens of thousands of clips, three windows each: far more than a CPU
featurises in a run's budget, next to every test window, which must all be read. A timed probe
of a few windows says how many fit; the training windows kept are then balanced over the classes
(one class after another, each clip's first window before its later ones), so that a rare class
keeps every window it has and a common one gives way. The test windows are never dropped: when
they alone exceed the budget, every window is read shorter (`audio_features`).
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentk.core.sound_windows import START_COLUMN
from solve_pipeline.sound.audio_features import audio_blocks, cached_rows
from solve_pipeline.inputs.features import aligned
from solve_pipeline.base.setup_modules import SetupArtifacts

PROBE_WINDOWS = 8
MIN_PER_CLASS = 4  # training windows a class keeps whatever the budget


def affordable_windows(artifacts: SetupArtifacts, ids: Sequence[str], seconds: float | None,
                       seed: int) -> tuple[list[str], str | None]:
    """The training ids to featurise within `seconds` (with every test window), and a note saying
    what was left out; every id when the maps are not windows or everything fits."""
    train, test, ids = artifacts.train_maps.get("aud"), artifacts.test_maps.get("aud"), list(ids)
    if seconds is None or train is None or test is None or START_COLUMN not in train.columns:
        return ids, None
    cache_dir = artifacts.workspace / "solve" / "cache"
    test = test.drop_duplicates("id").set_index("id")
    done = cached_rows(aligned(train, ids), test, artifacts.setup_dir, cache_dir)  # read before: free now
    fresh = [i for i, cached in zip(ids, done) if not cached]
    if len(fresh) <= PROBE_WINDOWS:
        return ids, None
    rng = np.random.default_rng(seed)
    probe = [fresh[i] for i in rng.choice(len(fresh), PROBE_WINDOWS, replace=False)]
    began = time.monotonic()
    audio_blocks(aligned(train, probe), test.iloc[:0], artifacts.setup_dir, cache_dir=cache_dir)
    per_window = max((time.monotonic() - began) / PROBE_WINDOWS, 1e-4)
    room = int(seconds / per_window) - int((~done[len(ids):]).sum())
    if room >= len(fresh):
        return ids, None
    classes = _labels(artifacts, ids)
    floor = MIN_PER_CLASS * len(np.unique(classes))
    keep = balanced(ids, classes, max(room + len(ids) - len(fresh), floor), rng)
    return keep, (f"windows: {len(keep)} of {len(ids)} training windows featurised (~{per_window * 1000:.0f} ms "
                  f"each, every test window first), balanced over {len(np.unique(classes))} classes")


def _labels(artifacts: SetupArtifacts, ids: list[str]) -> np.ndarray:
    """Each window's class (the first class target's), or one class for all when there is none."""
    spec = next((s for s in artifacts.targets if s.is_classification), None)
    if spec is None or artifacts.target_map_transformed is None:
        return np.zeros(len(ids), dtype=int)
    frame = artifacts.target_map_transformed.drop_duplicates("id").set_index("id")
    return frame[spec.column].reindex(ids).to_numpy()


def balanced(ids: Sequence[str], classes: np.ndarray, n: int, rng: np.random.Generator) -> list[str]:
    """`n` of `ids` taken one class after another, each class's clips' first windows first (a
    window id is `clip<k>_<end second>`, a clip's windows in order), in the order of `ids`."""
    clips = [str(i).rsplit("_", 1)[0] for i in ids]
    rank = pd.Series(clips).groupby(clips).cumcount().to_numpy()
    queues: dict[object, deque[int]] = defaultdict(deque)
    for i in sorted(range(len(ids)), key=lambda i: (int(rank[i]), rng.random())):
        queues[classes[i]].append(i)
    chosen: list[int] = []
    while len(chosen) < n and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < n:
                chosen.append(queue.popleft())
    return [ids[i] for i in sorted(chosen)]
