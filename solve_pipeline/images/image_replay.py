"""Frozen image embeddings of unseen rows, for a predictor: the run's backbone (its weights
travel in the pickle, so an export reads no weight file and no network), at the plan's resolution,
mirror and ImageNet head, through the very code the run embedded with (image_embedding.embed_images).

A picture that cannot be read gets the run's mean vector, as it did in the run. The pictures are
embedded on the CPU in float32 wherever the predictor runs, so that every machine gives one
answer: a run that embedded on a GPU (bfloat16 autocast) differs from it past the predictor's
check, which then refuses it and says by how much.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from solve_pipeline.base.table_inputs import Rows
from solve_pipeline.images.image_backbones import Backbone
from solve_pipeline.images.image_embedding import ImagePlan, embed_images, split_head


@dataclass
class EmbeddingReplay:
    """The images' pooled features (and ImageNet logits, with the head) per row, every image
    column's side by side as the run laid them out (pretrained_features._rows)."""

    plan_label: str
    px: int
    flip: bool
    classes: int  # the head's width (0: pooled features only)
    columns: list[str]
    mean: np.ndarray  # the run's mean vector: what an unreadable picture gets
    # The run's backbone until pickled (loading costs a second, paid only by a predictor that is
    # kept); the loaded network from then on (__getstate__).
    backbone: Backbone | None = None
    module: nn.Module | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["module"] = self._module()
        state["backbone"] = None  # its `build` is a closure over local files: the network stands in
        return state

    def _module(self) -> nn.Module:
        if self.module is None:
            assert self.backbone is not None
            self.module = self.backbone.load()
        return self.module.cpu()  # a GPU copy would not load where there is no GPU

    def vectors(self, rows: Rows) -> tuple[np.ndarray, np.ndarray | None]:
        """(pooled features, ImageNet logits or None) of the rows' pictures, computed once per Rows."""
        key = f"embedding:{id(self)}"
        if key not in rows.memo:
            rows.memo[key] = self._embed(rows)
        return rows.memo[key]

    def _embed(self, rows: Rows) -> tuple[np.ndarray, np.ndarray | None]:
        if rows.images is None or any(c not in rows.images for c in self.columns):
            raise ValueError(f"the rows hold no pictures of the image columns {self.columns}")
        paths = [p for c in self.columns for p in rows.images[c]]
        module = self._module()
        backbone = Backbone(self.plan_label, self.px, 0, 1.0, build=lambda: module, source="kept network",
                            classes=self.classes)
        plan = ImagePlan(backbone, self.px, self.flip, 0.0)
        missing: list[int] = []
        vectors = embed_images(paths, plan, cache_dir=None, threads=torch.get_num_threads(), missing=missing,
                               on=torch.device("cpu"))
        if vectors is None:
            vectors = np.tile(self.mean, (len(paths), 1)).astype(np.float32)
        vectors[missing] = self.mean
        pooled, head = split_head(vectors, plan)
        side_by_side = len(self.columns)
        return (np.hstack(np.split(pooled, side_by_side)),
                None if head is None else np.hstack(np.split(head, side_by_side)))
