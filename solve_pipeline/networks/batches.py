"""Mini-batches of a `FeatureSet` as torch tensors, for the networks and the setup's batch probe."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from solve_pipeline.base.dataset import FeatureSet

class _BlockDataset:
    """Row-indexed view over a FeatureSet side, for torch's DataLoader."""

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


def iterate_batches(
    features: FeatureSet,
    batch_size: int,
    *,
    split: str = "train",
    targets: np.ndarray | None = None,
    shuffle: bool = False,
    seed: int = 0,
) -> Iterator[dict]:
    """Yield dicts of torch tensors (`index`, `tab`, and `text`/`image`/`target` when present)."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    if split not in ("train", "test"):
        raise ValueError("split must be 'train' or 'test'")

    class _TorchDataset(_BlockDataset, Dataset):
        pass

    dataset = _TorchDataset(features, split, targets)
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)
    yield from loader
