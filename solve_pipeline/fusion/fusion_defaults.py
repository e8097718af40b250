"""The late-fusion net's untuned settings and the embedding families' default time: read by the
registry (a HEBO search's starting point, the families' inputs) and by the net and its inputs,
so kept below both and free of torch."""

from __future__ import annotations

from typing import Any

NN_DEFAULTS: dict[str, Any] = {"max_epochs": 30}
# Defaults inside the registry's FUSION_SPACE (what an untuned run uses), for seeding a HEBO search.
FUSION_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-3,
    "optimizer": "AdamW",
    "weight_decay": 1e-4,
    "dropout": 0.2,
    "batch_size": "128",
    "hidden_size": 128,
}

# Without a budget (tuning, tests) the embedding families get this much before falling back.
EMBED_DEFAULT_S = 240.0
