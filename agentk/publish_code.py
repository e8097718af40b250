"""The Kaggle end of a run on a code competition: Kaggle makes the leaderboard by rerunning a
notebook on its hidden test set (internet off), so a file made here cannot be sent.

The run's chosen submission is exported as a predictor (solve_pipeline/export), uploaded with the
wheels of its pinned packages as a private dataset, and run by a private script kernel that reads
the competition's files; once the kernel has written submission.csv, that kernel version is
submitted and scored. Credentials, the daily limit and the ledger are those of file submissions
(publish.py); anything Kaggle refuses or a kernel that fails or outlasts the wait ends the send in
one line, never the run: the local submission stays as it is.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.errors import AgentKError
from agentk.core.records.results import RunResult, SolveResult
from agentk.core.records.workspace import Workspace, read_json_object
from agentk.grading import leaderboard_position
from agentk.kaggle.client import UPLOAD_MIN_BYTES_PER_S, KaggleClient
from agentk.kaggle.errors import DailyLimitReached
from agentk.kaggle.kernel_bundle import (
    OUTPUT_FILE,
    KernelNames,
    WheelFetcher,
    dataset_folder,
    kernel_folder,
    pip_wheels,
)
from agentk.kaggle.kernels import (
    kernel_output,
    owner,
    push_kernel,
    submit_kernel,
    upload_dataset,
    wait_dataset,
    wait_kernel,
)
from agentk.kaggle.submit import file_digest, submission_message
from agentk.publish import _kaggle_summary, _say_report, ledger_for
from solve_pipeline.export.bundle import export

if TYPE_CHECKING:
    from agentk.core.records.config import RunConfig
    from agentk.core.records.events import EventLog

KERNEL_DIR = "kernel"  # under the workspace's submissions/: the pushed kernel and what it wrote
DATASET_WAIT_S = 900.0


def kernel_dir(workspace: Workspace) -> Path:
    return workspace.submissions / KERNEL_DIR


def submit_code_competition(workspace: Workspace, slug: str, config: RunConfig, events: EventLog,
                            client: KaggleClient | None = None, fetch_wheels: WheelFetcher | None = None) -> dict[str, Any]:
    """Send the run's chosen submission through a kernel; result.json's "kaggle" record, with
    `stop_reason` (one line) when the send stopped short."""
    run = RunResult.read(workspace.result_path)
    direction = run.direction if run is not None else None
    try:
        report = _send(workspace, slug, config, events, client or KaggleClient(),
                       fetch_wheels or pip_wheels(config.kernel_wheels))
    except DailyLimitReached as exc:
        events.emit("kaggle_daily_limit", model=_model(workspace), message=str(exc))
        events.say(f"  kaggle: daily limit reached, nothing sent: {exc}")
        return {**_kaggle_summary([], direction, str(exc)), "code_competition": True}
    except AgentKError as exc:  # KaggleError, ExportError: the send stops, the run has succeeded
        line = " ".join(str(exc).split())
        events.emit("kaggle_code_submission_failed", message=line)
        events.say(f"  kaggle: error: {line}")
        return {**_kaggle_summary([], direction, None), "code_competition": True, "stop_reason": line,
                "error": line}
    if report.get("skipped"):
        return {**_kaggle_summary([], direction, None), "code_competition": True, "stop_reason": report["skipped"]}
    return {**_kaggle_summary([report], direction, None), "code_competition": True}


def _model(workspace: Workspace) -> str:
    return str(SolveResult.read(workspace.solve).model)


def _send(workspace: Workspace, slug: str, config: RunConfig, events: EventLog, client: KaggleClient,
          fetch_wheels: WheelFetcher) -> dict[str, Any]:
    solve = SolveResult.read(workspace.solve)
    model = str(solve.model)
    ledger = ledger_for(workspace)
    digest = file_digest(workspace.submission_path)
    sent = ledger.find(slug, digest)
    if sent is not None and not config.force_submit:
        reason = (f"this predictor's submission was already sent to {slug} as submission {sent.record.ref}; "
                  "use --force-submit to send it again")
        events.emit("kaggle_candidate_skipped", model=model, reason=reason)
        events.say(f"  kaggle: {reason}")
        return {"skipped": reason}
    limits = client.limits(slug)
    if limits.allowed_now <= 0:
        when = "the competition's total limit is used up" if limits.limited_by_total else "try again after 00:00 UTC"
        raise DailyLimitReached(f"no submissions left for {slug} ({limits.today} used today): {when}")
    names = KernelNames(owner(client), slug)
    here = kernel_dir(workspace)
    if here.exists():
        shutil.rmtree(here)
    with tempfile.TemporaryDirectory(prefix="agentk-kernel-") as tmp:
        with events.status("exporting the predictor and gathering its wheels for the Kaggle kernel …"):
            exported = export(workspace.root, Path(tmp) / "export")
            missing = dataset_folder(exported.out, Path(tmp) / "dataset", names, fetch_wheels)
        events.emit("kernel_dataset_prepared", dataset=names.dataset_ref, pins=exported.requirements,
                    wheels_missing=missing)
        if missing:
            events.say(f"  kaggle: no wheel for {', '.join(missing)}: the kernel runs the image's versions of these")
        with events.status(f"uploading the predictor as the private dataset {names.dataset_ref} …"):
            dataset = Path(tmp) / "dataset"
            size = sum(p.stat().st_size for p in dataset.rglob("*") if p.is_file())
            # Bounded as a file upload is, at a slow but live rate, without its cap: the wheels
            # make a dataset far bigger than any CSV.
            upload_dataset(client, dataset, f"agentk: {model}",
                           timeout_s=client.upload_stall_s + size / UPLOAD_MIN_BYTES_PER_S)
            wait_dataset(client, names.dataset_ref, DATASET_WAIT_S, config.submit_poll_s)
    kernel = push_kernel(client, kernel_folder(here, names))
    events.emit("kernel_pushed", kernel=kernel.ref, version=kernel.version, url=kernel.url)
    events.say(f"  kaggle: kernel {kernel.ref} version {kernel.version} pushed: {kernel.url}")
    with events.status(f"waiting for the kernel {kernel.ref} (at most {config.kernel_timeout_s:g} s) …"):
        wait_kernel(client, kernel, config.kernel_timeout_s, config.submit_poll_s)
    output = kernel_output(client, kernel.ref, here / "output")
    written = next((p for p in output.files if p.name == OUTPUT_FILE), None)
    if written is None:
        raise AgentKError(f"the kernel {kernel.ref} finished without writing {OUTPUT_FILE}")
    agreement = kernel_agreement(workspace.submission_path, written)
    events.emit("kernel_output", kernel=kernel.ref, version=kernel.version, **(agreement or {}))
    if agreement and agreement["differing_rows"]:
        events.say(f"  kaggle: [yellow]warning:[/] the kernel's {OUTPUT_FILE} differs from the run's on "
                   f"{agreement['differing_rows']} of {agreement['rows']} rows (other package versions in the image?)")
    metric = str(read_json_object(SetupLayout(workspace.setup).plan).get("metric"))
    message = submission_message(model, metric, solve.validation_score)
    with events.status(f"submitting kernel {kernel.ref} to Kaggle ({slug}) and waiting for the score …"):
        record = submit_kernel(client, slug, kernel, OUTPUT_FILE, message)
        ledger.add(slug, digest, record)
        scored = client.poll(slug, record.ref, timeout_s=config.submit_timeout_s, interval_s=config.submit_poll_s)
        ledger.add(slug, digest, scored)
    report: dict[str, Any] = {
        "slug": slug, "ref": scored.ref, "status": scored.status, "message": message,
        "public_score": scored.public_score, "private_score": scored.private_score, "leaderboard": None,
        "model": model, "validation_score": solve.validation_score,
        "kernel": {"ref": kernel.ref, "version": kernel.version, "url": kernel.url},
        "dataset": names.dataset_ref, "wheels_missing": missing, "kernel_agreement": agreement,
    }
    run = RunResult.read(workspace.result_path)
    if scored.public_score is not None and run is not None and run.direction is not None:
        board = client.leaderboard(slug, keep_dir=workspace.submissions)
        place = leaderboard_position(scored.public_score, board, run.direction.higher_is_better)
        report["leaderboard"] = {"rank": place.rank, "n_teams": place.n_teams, "percentile": place.percentile,
                                 "medal": place.medal}
    events.emit("kaggle_submission", **report)
    _say_report(events, report)
    return report


def kernel_agreement(local: Path, kernel_file: Path) -> dict[str, int] | None:
    """How the kernel's file agrees with the run's own, row by id (the first column): a kernel run
    on Kaggle's copy of the public test should write the run's predictions; None when the two
    files hold other columns or other ids (then there is nothing to compare)."""
    try:
        ours = pd.read_csv(local, dtype=str, keep_default_na=False)
        theirs = pd.read_csv(kernel_file, dtype=str, keep_default_na=False)
    except (OSError, ValueError):
        return None
    key = ours.columns[0] if len(ours.columns) else None
    if key is None or list(ours.columns) != list(theirs.columns) or ours[key].duplicated().any() \
            or set(ours[key]) != set(theirs[key]) or len(ours) != len(theirs):
        return None
    aligned = theirs.set_index(key).loc[ours[key]].reset_index()
    differing = int((_numbers_or_text(aligned) != _numbers_or_text(ours)).any(axis=1).sum())
    return {"rows": len(ours), "differing_rows": differing}


def _numbers_or_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Values as numbers rounded to 1e-6 where they read as numbers (a probability printed with
    other digits is the same prediction), as text otherwise."""
    out = frame.copy()
    for column in out.columns:
        numbers = pd.to_numeric(out[column], errors="coerce")
        if numbers.notna().all():
            out[column] = numbers.round(6).astype(str)
    return out
