"""The fake Kaggle's datasets, kernels and code submissions (kaggle_server.py routes to them).

The endpoints are those the official client calls: `blobs.BlobApiService/StartBlobUpload` (then
a PUT of the bytes), `datasets.DatasetApiService/{GetDatasetStatus,CreateDataset,
CreateDatasetVersion}`, `kernels.KernelsApiService/{SaveKernel,GetKernelSessionStatus,
ListKernelSessionOutput}` (output files are GETs of their URL) and
`competitions.CompetitionApiService/CreateCodeSubmission`.

A pushed kernel really runs: its script, as a subprocess of `python`, in a fresh folder laid out
as Kaggle's (`kaggle/input/<competition>/`, `kaggle/input/<dataset>/`, `kaggle/working/`; the
script's "/kaggle/" paths point there). The competition folder holds the data files with the
test rows in an order the run never saw (ids kept), as Kaggle's rerun on its own test file does.
Uploaded zip archives are unpacked into folders, as Kaggle does for a dataset's archives.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class KernelRun:
    owner: str
    slug: str
    version: int
    meta: dict[str, Any]  # the SaveKernel request as sent
    status: str = "QUEUED"
    failure: str = ""
    log: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, bytes] = field(default_factory=dict)


@dataclass
class FakeKernels:
    """Datasets, kernels and their runs; `lock` is the server's."""

    lock: threading.Lock
    work: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / f"fake-kaggle-kernels-{os.getpid()}")
    python: str = sys.executable  # the kernel image's Python
    time_limit_s: float = 300.0  # Kaggle's session limit: a run past it ends in error
    start_delay_s: float = 0.0  # a queue before each run starts
    hidden_files: set[str] = field(default_factory=set)  # competition files a rerun does not mount
    blobs: dict[str, str] = field(default_factory=dict)  # upload token -> file name
    datasets: dict[str, list[dict[str, bytes]]] = field(default_factory=dict)  # owner/slug -> versions' files
    dataset_private: dict[str, bool] = field(default_factory=dict)
    runs: list[KernelRun] = field(default_factory=list)

    # ------------------------------------------------------------ routing

    def api(self, fake: Any, service: str, method: str, body: dict[str, Any]) -> tuple[int, Any]:
        handler = getattr(self, f"do_{method}", None)
        if handler is None:
            return 404, {"code": 404, "message": f"no method {service}/{method}"}
        return handler(fake, body)

    # ------------------------------------------------------------ blobs and datasets

    def do_StartBlobUpload(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        token = f"blob{len(fake.uploads)}"
        fake.uploads[token] = None
        self.blobs[token] = str(body.get("name", ""))
        return 200, {"token": token, "createUrl": f"{fake.base_url}/upload/{token}"}

    def do_GetDatasetStatus(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        ref = f"{body.get('ownerSlug')}/{body.get('datasetSlug')}"
        if ref not in self.datasets:
            return 404, {"code": 404, "message": "Dataset not found"}
        return 200, {"status": "READY"}

    def do_CreateDataset(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        ref = f"{body.get('ownerSlug')}/{body.get('slug')}"
        if ref in self.datasets:
            return 200, {"error": f"The requested title is already in use by a dataset: {ref}"}
        return self._store(fake, ref, body.get("files") or [], private=bool(body.get("isPrivate")))

    def do_CreateDatasetVersion(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        ref = f"{body.get('ownerSlug')}/{body.get('datasetSlug')}"
        if ref not in self.datasets:
            return 404, {"code": 404, "message": "Dataset not found"}
        return self._store(fake, ref, (body.get("body") or {}).get("files") or [], private=self.dataset_private[ref])

    def _store(self, fake: Any, ref: str, files: list[dict[str, Any]], private: bool) -> tuple[int, Any]:
        stored: dict[str, bytes] = {}
        for item in files:
            token = item.get("token", "")
            content, name = fake.uploads.get(token), self.blobs.get(token)
            if content is None or name is None:
                return 400, {"code": 400, "message": f"unknown or unfinished upload {token}"}
            if name.endswith(".zip"):  # Kaggle unpacks a dataset's archives into folders
                with zipfile.ZipFile(io.BytesIO(content)) as zf:
                    for member in zf.infolist():
                        if not member.is_dir():
                            stored[f"{name[:-4]}/{member.filename}"] = zf.read(member)
            else:
                stored[name] = content
        self.datasets.setdefault(ref, []).append(stored)
        self.dataset_private[ref] = private
        return 200, {"ref": ref, "url": f"https://www.kaggle.com/datasets/{ref}", "status": "ok", "error": ""}

    # ------------------------------------------------------------ kernels

    def do_SaveKernel(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        owner, _, slug = str(body.get("slug", "")).partition("/")
        if not slug or owner != fake.username:
            return 403, {"code": 403, "message": "You may only push kernels you own"}
        if body.get("competitionDataSources") and any(s not in fake.competitions for s in body["competitionDataSources"]):
            return 200, {"invalidCompetitionSources": body["competitionDataSources"]}
        missing = [s for s in body.get("datasetDataSources") or [] if s not in self.datasets]
        if missing:
            return 200, {"invalidDatasetSources": missing}
        version = 1 + sum(1 for r in self.runs if (r.owner, r.slug) == (owner, slug))
        run = KernelRun(owner, slug, version, body)
        self.runs.append(run)
        threading.Thread(target=self._run, args=(fake, run), daemon=True).start()
        return 200, {"ref": f"/code/{owner}/{slug}", "url": f"https://www.kaggle.com/code/{owner}/{slug}",
                     "versionNumber": version}

    def latest(self, owner: str, slug: str, version: int | None = None) -> KernelRun | None:
        mine = [r for r in self.runs if (r.owner, r.slug) == (owner, slug) and version in (None, r.version)]
        return mine[-1] if mine else None

    def do_GetKernelSessionStatus(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        run = self.latest(body.get("userName", ""), body.get("kernelSlug", ""))
        if run is None:
            return 404, {"code": 404, "message": "Kernel not found"}
        return 200, {"status": run.status, "failureMessage": run.failure}

    def do_ListKernelSessionOutput(self, fake: Any, body: dict[str, Any]) -> tuple[int, Any]:
        run = self.latest(body.get("userName", ""), body.get("kernelSlug", ""))
        if run is None:
            return 404, {"code": 404, "message": "Kernel not found"}
        files = [{"fileName": name, "url": f"{fake.base_url}/kernel-output/{run.owner}/{run.slug}/{run.version}/{name}"}
                 for name in run.outputs]
        return 200, {"files": files, "log": json.dumps(run.log)}

    def output_file(self, path: str) -> bytes | None:
        """The bytes behind an output file's URL (/kernel-output/owner/slug/version/name)."""
        parts = path.strip("/").split("/")
        if len(parts) != 5 or not parts[3].isdigit():
            return None
        with self.lock:
            run = self.latest(parts[1], parts[2], int(parts[3]))
        return None if run is None else run.outputs.get(parts[4])

    def _run(self, fake: Any, run: KernelRun) -> None:
        """The kernel's script in a Kaggle-shaped folder, with the session's time limit."""
        time.sleep(self.start_delay_s)
        if fake.stopped.is_set():  # the server is gone: a queued run never starts
            return
        root = self.work / f"{run.slug}-v{run.version}" / "kaggle"
        with self.lock:
            run.status = "RUNNING"
            for slug in run.meta.get("competitionDataSources") or []:
                _unseen_competition_files(fake.competitions[slug], root / "input" / slug, self.hidden_files)
            for ref in run.meta.get("datasetDataSources") or []:
                for name, data in self.datasets[ref][-1].items():
                    target = root / "input" / ref.split("/", 1)[1] / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
        working = root / "working"
        working.mkdir(parents=True, exist_ok=True)
        script = root.parent / "__script__.py"
        script.write_text(str(run.meta.get("text", "")).replace("/kaggle/", f"{root}/"), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KAGGLE", "AGENTK"))}
        try:
            done = subprocess.run([self.python, str(script)], cwd=working, env=env, capture_output=True, text=True,
                                  timeout=self.time_limit_s)
            code, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            code, out, err = None, _text(exc.stdout), _text(exc.stderr)
        log = [{"stream_name": "stdout", "time": 1.0, "data": line + "\n"} for line in out.splitlines()]
        log += [{"stream_name": "stderr", "time": 2.0, "data": line + "\n"} for line in err.splitlines()]
        with self.lock:
            run.log = log
            run.outputs = {p.name: p.read_bytes() for p in working.iterdir() if p.is_file()}
            if code == 0:
                run.status = "COMPLETE"
            else:
                run.status = "ERROR"
                run.failure = ("Your notebook exceeded the time limit" if code is None
                               else f"Your notebook hit an unhandled error while rerunning (exit code {code})")


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def _unseen_competition_files(comp: Any, folder: Path, hidden: set[str]) -> None:
    """The competition's data files with the test rows shuffled (ids kept): every CSV keyed by
    the id column over exactly the answers' ids (the test table, the sample submission) follows
    one new order, so the kernel's predictor reads a test file the run never saw."""
    folder.mkdir(parents=True, exist_ok=True)
    id_column = comp.grading.id_column
    ids = comp.answers[id_column].astype(str)
    order = {key: rank for rank, key in enumerate(ids.to_numpy()[np.random.default_rng(7).permutation(len(ids))])}
    with zipfile.ZipFile(io.BytesIO(comp.archive)) as zf:
        for name in zf.namelist():
            if name.endswith("/") or name in hidden:
                continue
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            data = zf.read(name)
            if name.lower().endswith(".csv"):
                frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
                if id_column in frame and set(frame[id_column]) == set(order) and len(frame) == len(order):
                    frame = frame.iloc[np.argsort(frame[id_column].map(order).to_numpy())]
                    data = frame.to_csv(index=False).encode()
            target.write_bytes(data)


def code_submission(fake: Any, comp: Any, body: dict[str, Any]) -> tuple[int, bytes | None, str]:
    """The output file a CreateCodeSubmission names (status, content, error message)."""
    run = fake.kernels.latest(body.get("kernelOwner", ""), body.get("kernelSlug", ""),
                              int(body["kernelVersion"]) if body.get("kernelVersion") else None)
    if run is None:
        return 404, None, "Kernel not found"
    if run.status != "COMPLETE":
        return 400, None, f"The kernel version has not completed successfully (status {run.status})"
    if comp.slug not in (run.meta.get("competitionDataSources") or []):
        return 400, None, "The kernel does not use this competition's data"
    name = body.get("fileName") or "submission.csv"
    if name not in run.outputs:
        return 400, None, f"The kernel's output holds no {name}"
    return 200, run.outputs[name], ""
