"""The pretrained families' matrix for unseen rows (pretrained_linear, pretrained_head,
pretrained_ordinal): the tabular blocks by the run's fitted linear maps, beside the images'
embeddings (images.image_replay) standardized by the scalers the run fitted, one per block, dense
float32 as pretrained_features.pretrained_matrices made the run's test side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from solve_pipeline.base.table_inputs import InputReplay, LinearTable, Rows
from solve_pipeline.images.image_replay import EmbeddingReplay

POOLED, HEAD = "image", "image-head"  # the embedding blocks, as pretrained_matrices orders them


@dataclass(frozen=True)
class PretrainedReplay(InputReplay):
    table: LinearTable
    embedding: EmbeddingReplay
    scalers: list[tuple[str, Any]]  # (POOLED or HEAD, the fitted StandardScaler) in the matrix's order

    def test(self, rows: Rows) -> np.ndarray:
        pooled, head = self.embedding.vectors(rows)
        blocks: list[Any] = self.table.blocks(rows.tab)
        for block, scaler in self.scalers:
            values = pooled if block == POOLED else head
            if values is None:
                raise ValueError("the kept embedding gives no ImageNet logits, which this family reads")
            blocks.append(sparse.csr_matrix(scaler.transform(values)))
        return sparse.hstack(blocks).toarray().astype(np.float32)
