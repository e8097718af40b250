"""Rows of a `FeatureSet` as the networks read them, batched: the setup's batch probe."""

from __future__ import annotations

import numpy as np

from solve_pipeline.base.dataset import FeatureSet

class _BlockDataset:
    """Row-indexed view over a FeatureSet side."""

    def __init__(self, features: FeatureSet, split: str, targets: np.ndarray | None) -> None:
        self.tab = np.nan_to_num(features.tab_train if split == "train" else features.tab_test)
        self.text = features.text_train if split == "train" else features.text_test
        self.image = features.image_train if split == "train" else features.image_test
        self.image_shape = features.image_shape
        self.targets = targets

    def __len__(self) -> int:
        return self.tab.shape[0]

    def __getitem__(self, index: int) -> dict[str, np.ndarray]:
        item: dict[str, np.ndarray] = {"index": np.int64(index), "tab": self.tab[index]}
        if self.text is not None:
            item["text"] = self.text[index].toarray().ravel()
        if self.image is not None and self.image_shape is not None:
            item["image"] = self.image[index].reshape(self.image_shape)
        if self.targets is not None:
            item["target"] = np.asarray(self.targets[index])
        return item


def first_batch(
    features: FeatureSet,
    batch_size: int,
    *,
    split: str = "train",
    targets: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The first `batch_size` rows of one side as the networks read them (`index`, `tab`, and
    `text`/`image`/`target` when present), stacked: what the setup's batch probe checks. NumPy, not
    torch: importing torch cost the probe more CPU than the rest of it on a table."""
    if split not in ("train", "test"):
        raise ValueError("split must be 'train' or 'test'")
    dataset = _BlockDataset(features, split, targets)
    items = [dataset[index] for index in range(min(batch_size, len(dataset)))]
    return {key: np.stack([item[key] for item in items]) for key in items[0]} if items else {}
