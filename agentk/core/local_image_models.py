"""Image models the user already has on disk: a folder named by `--image-backbone`, or a
well-known checkpoint in the local Hugging Face hub cache, described from their JSON files alone.

Nothing here imports torch or transformers: the runner reads it to show the sandboxed solver those
folders (read-only) and nothing else of the user's disk, and the solver reads it to list the models
as backbones (solve_pipeline/images/image_backbones_local.py). Nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# Published ImageNet-1k top-1 (%) of checkpoints worth more than the bundled EfficientNet-Lite, by hub
# repo id: the classifier's accuracy, or its linear probe's for self-supervised and CLIP models (their
# frozen features are what the solver uses). Sources: the ConvNeXt, Swin, DeiT and EfficientNet papers'
# ImageNet-1k tables, DINOv2 (Oquab et al. 2023, table 4), CLIP (Radford et al. 2021, table 10).
# A cached model outside this table has no published figure to weigh: it is used only when named.
PUBLISHED_TOP1: dict[str, float] = {
    "facebook/dinov2-small": 81.1,
    "facebook/dinov2-base": 84.5,
    "facebook/dinov2-large": 86.3,
    "facebook/convnext-tiny-224": 82.1,
    "facebook/convnext-small-224": 83.1,
    "facebook/convnext-base-224": 83.8,
    "microsoft/swin-tiny-patch4-window7-224": 81.2,
    "microsoft/swin-small-patch4-window7-224": 83.2,
    "facebook/deit-small-patch16-224": 79.8,
    "facebook/deit-base-patch16-224": 81.8,
    "google/efficientnet-b1": 79.1,
    "google/efficientnet-b2": 80.1,
    "google/efficientnet-b3": 81.6,
    "openai/clip-vit-base-patch16": 80.2,
    "openai/clip-vit-large-patch14": 83.9,
}
# The same figures for the solver's own backbones (EfficientNet-Lite's TF-Lite release, torchvision's
# weight tables), so a cached model is weighed against the best one this install has.
BUNDLED_TOP1: dict[str, float] = {
    "efficientnet-lite0": 75.1, "efficientnet-lite1": 76.7, "efficientnet-lite2": 77.6,
    "torchvision-convnext_tiny": 82.5, "torchvision-resnet50": 76.1, "torchvision-efficientnet_b0": 77.7,
    "torchvision-resnet18": 69.8,
}

_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
_TIMM_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class ImageModelFiles:
    """An image model's folder and what its config files say about it."""

    folder: Path
    kind: Literal["transformers", "timm"]
    name: str  # unique per model and weights: it names the model's embedding cache
    label: str  # as the user knows it: the path or repo id
    native_px: int  # its processor's crop (or input) size
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    # RGB in [0, 1] times this is what the model's normalisation expects (1 when the processor
    # rescales 0..255 by 1/255, 255 when it does not rescale).
    scale: float
    width: int | None  # pooled feature size from the model config (None: the config does not say)
    top1: float | None = None
    named: bool = False


def hub_cache() -> Path:
    """The hub cache huggingface_hub itself uses (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/...)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def repo_folder(repo_id: str, cache: Path | None = None) -> Path:
    return (cache or hub_cache()) / f"models--{repo_id.replace('/', '--')}"


def cached_snapshot(repo_id: str, cache: Path | None = None) -> Path | None:
    """The snapshot `refs/main` points at (else the newest), None when the repo is not cached."""
    repo = repo_folder(repo_id, cache)
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        main = ""
    if main and (snapshots / main).is_dir():
        return snapshots / main
    found = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def named_setting(value: str) -> str:
    """The `--image-backbone` value as the run config keeps it: an existing folder as an absolute
    path, or a hub repo id (org/name) to look up in the local cache. ValueError otherwise."""
    path = Path(value).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.exists():
        raise ValueError(f"--image-backbone {value}: not a folder (give the model's folder, with its config.json)")
    if _REPO_ID.match(value):
        return value
    raise ValueError(f"--image-backbone {value}: no such folder (nor a hub repo id like org/name)")


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return data


def _px(value: Any) -> int | None:
    """A processor's size entry: an int, or a dict with height / shortest_edge."""
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        for key in ("height", "shortest_edge"):
            if isinstance(value.get(key), int):
                return value[key]
    return None


def _triple(values: Any, default: float) -> tuple[float, float, float]:
    if values is None:
        return (default, default, default)
    if isinstance(values, (int, float)):
        return (float(values),) * 3  # type: ignore[return-value]
    if len(values) != 3:
        raise ValueError(f"image_mean/std has {len(values)} channels, not 3")
    return tuple(float(v) for v in values)  # type: ignore[return-value]


def _width(config: dict[str, Any]) -> int | None:
    """The pooled feature size: a CLIP-like model's projection, a pyramid's last stage, a ViT's hidden size."""
    if isinstance(config.get("vision_config"), dict):
        return config.get("projection_dim") or config["vision_config"].get("hidden_size")
    if config.get("hidden_sizes"):
        return int(config["hidden_sizes"][-1])
    if config.get("model_type") == "swin" and config.get("embed_dim") and config.get("depths"):
        return int(config["embed_dim"]) * 2 ** (len(config["depths"]) - 1)
    for key in ("hidden_size", "hidden_dim", "num_features"):
        if isinstance(config.get(key), int):
            return config[key]
    return None


def _identity(folder: Path, label: str, repo_id: str | None) -> str:
    """A repo id names its model; a folder is named by its name plus a digest of where it is and
    its weights' sizes and times, so two different folders never share an embedding cache."""
    if repo_id is not None:
        return repo_id.replace("/", "--")
    stamp = [str(folder.resolve())]
    for path in sorted(folder.iterdir()):
        try:
            info = path.stat()
        except OSError:
            continue
        stamp.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    slug = re.sub(r"[^\w.-]", "_", folder.name)[:40] or "model"
    return f"{slug}-{hashlib.sha1('|'.join(stamp).encode()).hexdigest()[:8]}"


def describe(folder: Path, label: str, *, repo_id: str | None = None, named: bool = False) -> ImageModelFiles:
    """What the folder's config files say; ValueError (one line) when it holds no usable image model."""
    folder = Path(folder)
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise ValueError("no config.json")
    try:
        config = _read_json(config_path)
        top1 = PUBLISHED_TOP1.get(repo_id) if repo_id else None
        if "architecture" in config and "pretrained_cfg" in config:
            return _timm_files(folder, label, config, repo_id, named, top1)
        processor_path = folder / "preprocessor_config.json"
        if not processor_path.is_file():
            raise ValueError("no preprocessor_config.json: not an image model (or not one transformers can normalise)")
        if not any((folder / name).is_file() for name in _HF_WEIGHTS):
            raise ValueError("no weights file (model.safetensors or pytorch_model.bin)")
        processor = _read_json(processor_path)
        normalise = processor.get("do_normalize", True)
        rescale = processor.get("do_rescale", True)
        crop = _px(processor.get("crop_size")) if processor.get("do_center_crop", True) else None
        vision = config.get("vision_config") if isinstance(config.get("vision_config"), dict) else config
        native = crop or _px(processor.get("size")) or vision.get("image_size") or 224
        return ImageModelFiles(
            folder=folder, kind="transformers", name=f"hf-{_identity(folder, label, repo_id)}", label=label,
            native_px=int(native),
            mean=_triple(processor.get("image_mean"), 0.0) if normalise else (0.0, 0.0, 0.0),
            std=_triple(processor.get("image_std"), 1.0) if normalise else (1.0, 1.0, 1.0),
            scale=float(processor.get("rescale_factor", 1 / 255)) * 255.0 if rescale else 255.0,
            width=_width(config), top1=top1, named=named)
    except (OSError, ValueError, TypeError, KeyError, IndexError) as error:
        raise ValueError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None


def _timm_files(folder: Path, label: str, config: dict[str, Any], repo_id: str | None, named: bool,
                top1: float | None) -> ImageModelFiles:
    if importlib.util.find_spec("timm") is None:
        raise ValueError(f"a timm model ({config['architecture']}), but timm is not installed")
    if not any((folder / name).is_file() for name in _TIMM_WEIGHTS):
        raise ValueError("no weights file (model.safetensors or pytorch_model.bin)")
    cfg = config["pretrained_cfg"]
    return ImageModelFiles(
        folder=folder, kind="timm", name=f"timm-{_identity(folder, label, repo_id)}", label=label,
        native_px=int(cfg.get("input_size", [3, 224, 224])[-1]),
        mean=_triple(cfg.get("mean"), 0.0), std=_triple(cfg.get("std"), 1.0), scale=1.0,
        width=config.get("num_features"), top1=top1, named=named)


def find_named(value: str) -> ImageModelFiles:
    """The model `--image-backbone` names (a folder, or a repo id in the local hub cache);
    ValueError (one line) when it cannot be used."""
    path = Path(value).expanduser()
    if path.is_dir():
        return describe(path, value, named=True)
    if _REPO_ID.match(value):
        snapshot = cached_snapshot(value)
        if snapshot is None:
            raise ValueError(f"not a folder, nor a model in the local hub cache ({hub_cache()})")
        return describe(snapshot, value, repo_id=value, named=True)
    raise ValueError("no such folder")


def cached_models() -> tuple[list[ImageModelFiles], list[str]]:
    """The well-known checkpoints (PUBLISHED_TOP1) in the local hub cache, best first, and a line
    for each one that is there but cannot be used."""
    found, notes = [], []
    for repo_id, _top1 in sorted(PUBLISHED_TOP1.items(), key=lambda item: -item[1]):
        snapshot = cached_snapshot(repo_id)
        if snapshot is None:
            continue
        try:
            found.append(describe(snapshot, repo_id, repo_id=repo_id))
        except ValueError as error:
            notes.append(f"cached {repo_id}: {error}; skipped")
    return found, notes


def solver_mounts(named: str | None) -> list[Path]:
    """What the sandboxed solver must read: the named folder (and where its linked files really
    are: a hub snapshot links into the repo's blobs) and the cached well-known repos. The rest of the
    hub cache (its token beside it included) stays unseen."""
    paths: list[Path] = []
    folder = None
    if named is not None:
        path = Path(named).expanduser()
        folder = path if path.is_dir() else cached_snapshot(named) if _REPO_ID.match(named) else None
    if folder is not None:
        paths.append(folder.resolve())
        for item in folder.iterdir():
            if item.is_symlink():
                paths.append(item.resolve().parent)
    for repo_id in PUBLISHED_TOP1:
        repo = repo_folder(repo_id)
        if repo.is_dir():
            paths.append(repo.resolve())
    return list(dict.fromkeys(p for p in paths if p.exists()))


def solver_env() -> dict[str, str]:
    """The sandboxed solver's HOME is its own folder: it is told where the user's hub cache is."""
    return {"HF_HUB_CACHE": str(hub_cache())}


def offline() -> None:
    """Hugging Face libraries never reach the network from this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
