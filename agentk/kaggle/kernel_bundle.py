"""What a code competition's submission is made of, on disk: the dataset folder (an exported
predictor, the wheels of its pinned packages, dataset-metadata.json) and the kernel folder (a
script that installs what the image lacks, offline, and runs the predictor on the competition's
files; kernel-metadata.json). Nothing here talks to Kaggle but `pip download` for the wheels.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentk.core.predictor_layout import ExportLayout

# The Python of Kaggle's image, which the wheels are chosen for (AGENTK_KAGGLE_PYTHON overrides).
KAGGLE_PYTHON = os.environ.get("AGENTK_KAGGLE_PYTHON", "3.11")
# Linux x86-64 wheels its glibc (2.35, Ubuntu 22.04) runs: pip matches these tags literally.
KAGGLE_PLATFORMS = ("manylinux2014_x86_64", *(f"manylinux_2_{minor}_x86_64" for minor in (17, 24, 27, 28, 31, 34, 35)))
WHEELS = "wheels"
CODE_FILE = "agentk_predict.py"
OUTPUT_FILE = "submission.csv"
_SLUG_MAX = 50

# {slug}, {dataset}: the competition's and the dataset's folder names under /kaggle/input.
KERNEL_SCRIPT = '''"""agentk's predictor for {slug}, run by Kaggle on the competition's test files (internet off).

The predictor (an `agentk export`) comes from the dataset {dataset}; the packages it was pinned to
that this image lacks, or holds at another version, are installed from the dataset's wheels.
"""
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

INPUT = Path("/kaggle/input")
OUTPUT = Path("/kaggle/working") / "{output}"


def find(name, marker=None):
    """/kaggle/input/NAME, or a folder NAME (holding MARKER) a few levels down where Kaggle mounts it."""
    for depth in range(4):
        for folder in sorted(INPUT.glob("/".join(["*"] * depth + [name]))):
            if folder.is_dir() and (marker is None or (folder / marker).exists()):
                return folder
    sys.exit("error: /kaggle/input holds no folder " + name + (" with " + marker if marker else ""))


def unpacked(source):
    """The predictor in a scratch folder; a folder the dataset still holds as a zip is unpacked."""
    here = Path(tempfile.mkdtemp(prefix="agentk-predictor-"))
    shutil.copytree(source, here, dirs_exist_ok=True)
    for archive in here.glob("*.zip"):
        if not (here / archive.stem).is_dir():
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(here / archive.stem)
        archive.unlink()
    return here


def install_missing(here):
    """The pinned packages the image lacks or holds at another version, from the wheels, offline."""
    wanted = []
    for line in (here / "requirements.txt").read_text().splitlines():
        name, _, version = line.strip().partition("==")
        if not version or name.startswith("#"):
            continue
        try:
            if importlib.metadata.version(name) == version:
                continue
        except importlib.metadata.PackageNotFoundError:
            pass
        wanted.append(name + "==" + version)
    if not wanted:
        return None
    site = Path(tempfile.mkdtemp(prefix="agentk-site-"))
    print("installing from the dataset's wheels: " + ", ".join(wanted), flush=True)
    # With their dependencies (pydantic needs its own pydantic-core), every pin held to its version
    # (a dependency the image already holds at the pinned version is the pinned one again); without
    # them when a dependency has no wheel.
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--quiet", "--disable-pip-version-check",
           "--find-links", str(here / "{wheels}"), "--target", str(site), "-c", str(here / "requirements.txt")]
    done = subprocess.run([*pip, *wanted])
    if done.returncode != 0:
        done = subprocess.run([*pip, "--no-deps", *wanted])
    if done.returncode != 0:
        print("warning: some pinned packages could not be installed; the image's versions are used",
              file=sys.stderr, flush=True)
    return site


def main():
    data = find("{slug}")
    here = unpacked(find("{dataset}", "predict.py"))
    site = install_missing(here)
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, str(here / "predict.py"), str(data), str(OUTPUT)], env=env)
    shutil.rmtree(here, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(done.returncode)  # the predictor's own error line is the log's last
    if not OUTPUT.is_file():
        sys.exit("error: the predictor wrote no " + OUTPUT.name)
    print("wrote " + str(OUTPUT), flush=True)


main()
'''


@dataclass(frozen=True)
class KernelNames:
    """Where the predictor lives on Kaggle: one dataset and one kernel per competition, new
    versions on each submission."""

    owner: str
    slug: str

    @property
    def dataset(self) -> str:
        return _slug(f"agentk-predictor-{self.slug}")

    @property
    def dataset_ref(self) -> str:
        return f"{self.owner}/{self.dataset}"

    @property
    def kernel(self) -> str:
        return _slug(f"agentk-{self.slug}")

    @property
    def kernel_ref(self) -> str:
        return f"{self.owner}/{self.kernel}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower())[:_SLUG_MAX].strip("-")


def requirement_pins(export_dir: Path) -> list[str]:
    """The export's `name==version` lines."""
    lines = ExportLayout(Path(export_dir)).requirements.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if "==" in line and not line.lstrip().startswith("#")]


# Fetches wheels for the pins into a folder and returns the pins it found no wheel for.
WheelFetcher = Callable[[list[str], Path], list[str]]


def pip_wheels(find_links: Path | None = None, timeout_s: float = 600.0) -> WheelFetcher:
    """Wheels of the pins and their dependencies for Kaggle's image (its Python, Linux x86-64,
    binary only) by `pip download`; with `find_links`, every wheel of that folder, and nothing
    from the internet."""

    def fetch(pins: list[str], dest: Path) -> list[str]:
        dest.mkdir(parents=True, exist_ok=True)
        if find_links is not None:
            return _copy_matching(pins, Path(find_links), dest)
        platforms = [arg for p in KAGGLE_PLATFORMS for arg in ("--platform", p)]
        missing = []
        for pin in pins:  # one by one: a pin with no wheel must not cost the others theirs
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                     "--only-binary=:all:", "--python-version", KAGGLE_PYTHON, "--implementation",
                     "cp", *platforms, "--dest", str(dest), pin],
                    capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                missing.append(pin)
                continue
            if done.returncode != 0:
                missing.append(pin)
        return missing

    return fetch


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _copy_matching(pins: list[str], source: Path, dest: Path) -> list[str]:
    """Every wheel in `source` (dependencies too); returns the pins none of them is for (a
    wheel's file name starts name-version-)."""
    have = set()
    for path in sorted(source.glob("*.whl")) if source.is_dir() else []:
        name, version = path.name.split("-")[:2]
        have.add((_normal(name), version))
        shutil.copy2(path, dest / path.name)
    return [pin for pin in pins if (_normal(pin.partition("==")[0]), pin.partition("==")[2]) not in have]


def dataset_folder(export_dir: Path, dest: Path, names: KernelNames, fetch_wheels: WheelFetcher) -> list[str]:
    """`dest` made anew as the dataset: the export, its wheels, the metadata. Returns the pins
    without a wheel (the kernel then runs them at the image's versions)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(export_dir, dest)
    missing = fetch_wheels(requirement_pins(export_dir), dest / WHEELS)
    (dest / WHEELS).mkdir(exist_ok=True)
    (dest / WHEELS / "README.txt").write_text(
        f"Wheels of the predictor's pinned packages for Python {KAGGLE_PYTHON} on Linux x86-64.\n", encoding="utf-8")
    title = names.dataset.replace("-", " ")
    (dest / "dataset-metadata.json").write_text(json.dumps({
        "title": title if len(title) >= 6 else f"agentk {title}", "id": names.dataset_ref,
        "licenses": [{"name": "CC0-1.0"}],
    }, indent=2), encoding="utf-8")
    return missing


def kernel_folder(dest: Path, names: KernelNames) -> Path:
    """`dest` holding the kernel's script and its metadata: private, internet off, the
    competition and the predictor's dataset as inputs."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / CODE_FILE).write_text(KERNEL_SCRIPT.format(slug=names.slug, dataset=names.dataset,
                                                       output=OUTPUT_FILE, wheels=WHEELS), encoding="utf-8")
    (dest / "kernel-metadata.json").write_text(json.dumps({
        "id": names.kernel_ref, "title": names.kernel.replace("-", " "), "code_file": CODE_FILE,
        "language": "python", "kernel_type": "script", "is_private": True, "enable_gpu": False,
        "enable_tpu": False, "enable_internet": False, "dataset_sources": [names.dataset_ref],
        "competition_sources": [names.slug], "kernel_sources": [], "model_sources": [],
    }, indent=2), encoding="utf-8")
    return dest
