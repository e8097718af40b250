"""Data without a competition page: a folder of data files (with or without `data/`), or the archive
Kaggle's download gives (`kaggle competitions download -c titanic` leaves `titanic.zip`).

Both are competitions. The agent's view is the files as they are (an archive goes into `data/`
whole: perception unpacks archives, safely, like any other) and a short page that says no page
came with them. The metric is the user's (`--metric`), written on that page the way a Kaggle page
states it, or else the setup assumes one from the data and says so, as for an empty page.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from agentk.core.errors import SourceError
from agentk.core.metrics import get_metric
from agentk.core.metrics.detection import infer_metric
from agentk.core.readers import file_kind
from agentk.sources import common
from agentk.sources.base import Competition


def is_archive(path: Path) -> bool:
    return path.is_file() and file_kind(path) == "archive"


def _holds_a_competition(folder: Path) -> bool:
    return any((folder / name).exists() for name in ("description.md", "data", "public", "prepared"))


def has_data_files(folder: Path) -> bool:
    """Whether a folder holds a competition's data without its page: a non-empty data/, or a table
    or an archive of them at the top. A folder of competitions (a child holding one) is not one,
    whatever tables sit beside them (medal thresholds, a leaderboard)."""
    if any(child.is_dir() and _holds_a_competition(child) for child in folder.iterdir()):
        return False
    data = folder / "data"
    if data.is_dir():
        return any(not p.name.startswith(".") for p in data.iterdir())
    return any(p.is_file() and not p.name.startswith(".") and file_kind(p) in ("table", "archive")
               for p in folder.iterdir())


def evaluation_sentence(metric: str) -> str:
    """A page's evaluation section naming `metric` so that the page reader gets exactly it back:
    the first of its names (canonical, then aliases) that reads back unambiguously."""
    try:
        known = get_metric(metric)
    except Exception as exc:  # noqa: BLE001 - UnknownMetricError, with the registry's own wording
        raise SourceError(f"--metric {metric!r} is not a metric agentk computes: {exc}") from None
    # An image metric reads as one only on a page that says what its rows hold.
    objects = {"mask": " Each row holds a run-length encoded mask.",
               "instances": " Each row holds one object's run-length encoded mask.",
               "boxes": " Each row holds bounding boxes with their confidences."}.get(known.kind, "")
    for name in (known.name, known.name.replace("_", " "), *known.aliases):
        sentence = f"## Evaluation\n\nSubmissions are evaluated on {name}.{objects}\n"
        if infer_metric(sentence).name == known.name:
            return sentence
    raise SourceError(f"--metric {metric!r} cannot be stated on a page the setup reads back")


def _page(title: str, what: str, metric: str | None) -> str:
    return common.no_page(title, what) + ("\n" + evaluation_sentence(metric) if metric else "")


def load_bare(path: Path, metric: str | None = None) -> Competition:
    """A folder of data files or a zip archive as a competition without grading facts."""
    path = Path(path)
    if path.is_file():
        if not is_archive(path):
            raise SourceError(f"{path} is a file but not an archive: give a competition folder, a folder "
                              "of data files, or the zip (or tar) a download gives")
        title = common.humanise(path.name.split(".")[0])
        page = _page(title, f"the archive {path.name}", metric)
        return Competition(path.name.split(".")[0], "local", path, title, None, _archive_preparer(path, page))
    if not has_data_files(path):
        raise SourceError(f"{path} holds no data files: a competition folder needs its data "
                          "(with description.md beside data/, or data files alone)")
    title = common.humanise(path.name)
    data = path / "data" if (path / "data").is_dir() else path
    shown = "data files" if data == path else "data/"
    return Competition(path.name, "local", path, title, None, _folder_preparer(data, page=_page(title, shown, metric)))


def _folder_preparer(data: Path, page: str) -> Callable[[Path], list[str]]:
    def prepare(raw_dir: Path) -> list[str]:
        warnings: list[str] = []

        def build(out: Path) -> None:
            warnings.extend(common.copy_tree(data, out / "data").warnings(data.name))
            (out / common.DESCRIPTION_NAME).write_text(page, encoding="utf-8")

        common.build_atomically(Path(raw_dir), common.fingerprint([], [data], extra=f"bare {data.resolve()}\n{page}"), build)
        return warnings

    return prepare


def _archive_preparer(archive: Path, page: str) -> Callable[[Path], list[str]]:
    def prepare(raw_dir: Path) -> list[str]:
        def build(out: Path) -> None:
            (out / "data").mkdir()
            shutil.copyfile(archive, out / "data" / archive.name)
            (out / common.DESCRIPTION_NAME).write_text(page, encoding="utf-8")

        stat = archive.stat()
        stamp = common.fingerprint([], [], extra=f"archive {archive.resolve()} {stat.st_size} {stat.st_mtime_ns}\n{page}")
        common.build_atomically(Path(raw_dir), stamp, build)
        return []

    return prepare
