"""Vectors computed from files or texts, kept on disk so a resumed or repeated run pays once.

One npz per model (and resolution), keys to vectors, replaced atomically; keys say what the
vector was computed from (a file's path, size and mtime; a text's digest).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from agentk.core.records.workspace import replacing


def file_key(path: str) -> str:
    """A file's identity: its path, size and modification time (a replaced file is a new one)."""
    try:
        stat = os.stat(path)
        signature = f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}"
    except OSError:
        signature = f"missing|{path}"
    return hashlib.sha1(signature.encode()).hexdigest()


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Keys to float32 vectors in `directory/label.npz`; no directory: memory only."""

    def __init__(self, directory: Path | None, label: str) -> None:
        self.path = None if directory is None else directory / f"{label}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path is not None and self.path.is_file():
            try:
                with np.load(self.path) as stored:
                    self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"]))
            except (OSError, ValueError, KeyError):
                self.vectors = {}  # a damaged cache is only lost time

    def save(self) -> None:
        if self.path is None or not self.vectors:
            return
        keys = list(self.vectors)
        with replacing(self.path) as tmp, open(tmp, "wb") as handle:  # a handle: np.savez would add .npz to a path
            np.savez(handle, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
