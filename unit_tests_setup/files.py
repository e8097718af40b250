"""Small file helpers shared by the checks: finding tables, images, sound clips, the sample and the test ids
(maps are read by `agentk.core.maps.read_map`)."""

from __future__ import annotations

from pathlib import Path

from agentk.core.artifacts import MAP_CODES, SetupLayout
from agentk.core.maps import read_map
from agentk.core.sound_files import AUDIO_EXTENSIONS
from agentk.core.readers import IMAGE_EXTENSIONS as _IMAGE_SUFFIXES
from agentk.core.readers import UnreadableTable, file_kind, is_audio, table_columns

IMAGE_EXTENSIONS = set(_IMAGE_SUFFIXES)
# Files no table hides in, skipped by name where thousands of them would each be sniffed.
_MEDIA_SUFFIXES = IMAGE_EXTENSIONS | set(AUDIO_EXTENSIONS)


def data_files(raw: Path) -> list[Path]:
    return sorted(p for p in raw.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(raw).parts))


def has_images(raw: Path, written: Path | None = None) -> bool:
    """Pictures by extension, else by content (DICOM without an extension, arrays named otherwise);
    else pictures the setup wrote under `written` (setup/pictures/: pictures written as numbers in
    a table's cells, one file per row), judged by the first one found."""
    files = data_files(raw)
    if any(p.suffix.lower() in IMAGE_EXTENSIONS for p in files) or any(file_kind(p) == "image" for p in files):
        return True
    if written is None or not written.is_dir():
        return False
    first = next((p for p in written.rglob("*.npy") if not any(part.startswith(".") for part in p.relative_to(written).parts)), None)
    return first is not None and file_kind(first) == "image"


def has_audio(raw: Path) -> bool:
    """Sound clips are recognised by content, like perception does (the first one found settles it)."""
    return any(is_audio(p) for p in data_files(raw / "data") if p.suffix.lower() not in IMAGE_EXTENSIONS)


def has_tables(raw: Path) -> bool:
    """Tables are recognised by content (perception's rule), in archives' unpacked folders too."""
    return any(file_kind(p) == "table" for p in data_files(raw / "data") if p.suffix.lower() not in _MEDIA_SUFFIXES)


def csv_headers(raw: Path) -> dict[Path, list[str]]:
    """The header of every table under raw/data, whatever its format."""
    headers: dict[Path, list[str]] = {}
    for path in data_files(raw / "data"):
        if path.suffix.lower() in _MEDIA_SUFFIXES or file_kind(path) != "table":
            continue
        try:
            headers[path] = table_columns(path)
        except UnreadableTable:
            continue
    return headers


def find_sample_submission(raw: Path, plan: dict) -> Path | None:
    """The sample named by the plan, else the one CSV whose name says it is a sample submission."""
    named = plan.get("sample_submission")
    if isinstance(named, str) and named:
        path = (raw / named) if not Path(named).is_absolute() else Path(named)
        if path.is_file():
            return path
    candidates = [p for p in data_files(raw / "data") if ".csv" in p.name.lower() and ("sample" in p.name.lower() or "submission" in p.name.lower())]
    return candidates[0] if len(candidates) == 1 else None


def test_ids(setup: Path) -> list[str] | None:
    for code in MAP_CODES:
        path = SetupLayout(setup).input_map("test", code)
        if path.exists():
            return read_map(path)["id"].astype(str).tolist()
    return None
