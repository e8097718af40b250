"""The workspace stays the run's own: an id from data never puts it outside --workspace-root, two
runs never share it, links in data/ never pull outside files in, and a killed run's temp files
do not pile up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentk.core.records.config import RunConfig
from agentk.core.errors import AgentKError, WorkspaceError
from agentk.runner import run_competition
from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace, replacing, safe_component, workspace_for
from agentk.core.records.workspace_lock import workspace_lock

pytestmark = pytest.mark.integration

AGENTK = [sys.executable, "-m", "agentk.cli"]
SECRET = "root:x:0:0:root:/root:/bin/bash  # stands in for /etc/passwd"
HOLD_LOCK = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from agentk.core.records.workspace_lock import workspace_lock\n"
    "with workspace_lock(Path(sys.argv[1])):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(120)\n"
)


def make_competition(folder: Path, competition_id: str | None = None) -> Path:
    """A tiny local competition: description.md, data/ with train, test and sample."""
    data = folder / "data"
    data.mkdir(parents=True)
    (folder / "description.md").write_text("# Tiny\n\nPredict y from x. Submissions are scored by accuracy.\n")
    rows = "\n".join(f"{i},{i % 7},{i % 2}" for i in range(40))
    (data / "train.csv").write_text(f"id,x,y\n{rows}\n")
    (data / "test.csv").write_text("id,x\n" + "\n".join(f"{i},{i % 5}" for i in range(40, 50)) + "\n")
    (data / "sample_submission.csv").write_text("id,y\n" + "\n".join(f"{i},0" for i in range(40, 50)) + "\n")
    if competition_id is not None:
        (folder / "competition.toml").write_text(f"[competition]\nid = {json.dumps(competition_id)}\n")
    return folder


class StopAfterWorkspace(AgentKError):
    """Ends a real run once its workspace is built: setup and solve would take a minute."""


def run_until_setup(source: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run (source loaded, workspace locked, cleaned and prepared) stopped where setup starts."""
    for name in ("AGENTK_LLM_MODEL", "AGENTK_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def stop(*args: object, **kwargs: object) -> None:
        raise StopAfterWorkspace("stopped where setup starts")

    monkeypatch.setattr("agentk.runner.SetupMDP", stop)
    with pytest.raises(StopAfterWorkspace):
        run_competition(str(source), RunConfig(workspace_root=root, quiet=True))


def tree(folder: Path, leave_out: Path) -> dict[str, str]:
    """Every path under folder (file contents included) except those under leave_out."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path == leave_out or leave_out in path.parents:
            continue
        found[str(path.relative_to(folder))] = path.read_text() if path.is_file() else "<dir>"
    return found


# ---------------------------------------------------------------- ids from data


def test_readable_ids_are_kept_and_hostile_ones_become_one_component() -> None:
    for readable in ("titanic", "spaceship-titanic", "playground-series-s3e5", "Digit_Images.v2"):
        assert safe_component(readable) == readable
    hostile = ["../../x", "/etc/cron.d", "..", ".", ".hidden", "_memory", "a/b", "a\\b", "a\x00b", "x\ny", "-rf", "x" * 400]
    names = [safe_component(text) for text in hostile]
    for text, name in zip(hostile, names):
        assert "/" not in name and "\\" not in name and name not in (".", "..") and name[0].isalnum(), (text, name)
        assert all(c.isprintable() for c in name) and len(name) <= 100 and safe_component(name) == name
    assert len(set(names)) == len(names)  # different ids never share a folder


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_an_id_that_escapes_stays_inside_the_workspace_root(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "a" / "b" / "root"
    root.mkdir(parents=True)
    # Where the workspace would land if the id were joined as a path: an existing folder of
    # someone else's, with a raw/ that rebuilding the agent's data view used to delete.
    landing = tmp_path / "a" / "x" if kind == "relative" else tmp_path / "elsewhere"
    (landing / "raw").mkdir(parents=True)
    (landing / "raw" / "keep.txt").write_text("precious")
    competition_id = "../../x" if kind == "relative" else str(landing)
    source = make_competition(tmp_path / "source", competition_id)
    before = tree(tmp_path, leave_out=root)

    run_until_setup(source, root, monkeypatch)

    assert tree(tmp_path, leave_out=root) == before  # nothing created, changed or deleted outside
    [workspace] = [p for p in root.iterdir() if not p.name.startswith("_")]
    assert workspace.parent == root and (workspace / "raw" / "data" / "train.csv").is_file()


def test_a_workspace_entry_linking_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "titanic").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside"):
        workspace_for(root, "titanic")


# ---------------------------------------------------------------- one run per workspace


def test_a_second_run_on_a_workspace_in_use_stops_with_the_holders_pid(tmp_path: Path) -> None:
    source = make_competition(tmp_path / "source", "tiny")
    root = tmp_path / "root"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root / "tiny")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = subprocess.run([*AGENTK, "run", str(source), "-w", str(root), "--time-budget", "5"],
                              capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: workspace in use by pid {holder.pid} ("), proc.stderr
    assert not (root / "tiny" / "raw").exists() and not (root / "tiny" / "state.json").exists()  # nothing of its own done


def test_a_lock_left_by_a_killed_run_does_not_block(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    # The dead run's record is still there, naming its pid ...
    assert json.loads((folder / ".agentk.lock").read_text())["pid"] == holder.pid
    # ... and blocks no one, and this holder in turn blocks the next.
    with workspace_lock(folder):
        with pytest.raises(WorkspaceError, match=f"in use by pid {os.getpid()} "):
            with workspace_lock(folder):
                pass
    with workspace_lock(folder):
        pass


# ---------------------------------------------------------------- links in data/


def test_links_out_of_the_data_folder_are_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    (tmp_path / "outside_dir").mkdir()
    (tmp_path / "outside_dir" / "shadow").write_text(SECRET)
    source = make_competition(tmp_path / "source", "tiny")
    data = source / "data"
    (data / "passwd").symlink_to(secret)
    (data / "etc").symlink_to(tmp_path / "outside_dir", target_is_directory=True)
    (data / "sneaky").symlink_to(Path("..") / ".." / "passwd")  # relative, still outside
    (data / "train_again.csv").symlink_to("train.csv")  # stays inside: copied as the file
    root = tmp_path / "root"

    run_until_setup(source, root, monkeypatch)

    workspace = root / "tiny"
    raw_data = workspace / "raw" / "data"
    assert {p.name for p in raw_data.iterdir()} == {"train.csv", "test.csv", "sample_submission.csv", "train_again.csv"}
    assert (raw_data / "train_again.csv").read_text() == (data / "train.csv").read_text()
    assert not any(p.is_symlink() for p in workspace.rglob("*"))
    assert not any(SECRET in p.read_text(errors="replace") for p in workspace.rglob("*") if p.is_file())
    events = [json.loads(line) for line in (workspace / "logs" / "events.jsonl").read_text().splitlines()]
    warnings = [e for e in events if e.get("event") == "source_warning"]
    assert len(warnings) == 1 and "data/passwd" in warnings[0]["message"] and "data/sneaky" in warnings[0]["message"]


def test_a_data_folder_that_is_itself_a_link_is_copied(tmp_path: Path) -> None:
    real = make_competition(tmp_path / "real")
    source = tmp_path / "source"
    source.mkdir()
    (source / "description.md").write_text((real / "description.md").read_text())
    (source / "data").symlink_to(real / "data", target_is_directory=True)
    assert load_competition(source).prepare(tmp_path / "raw") == []
    assert {p.name for p in (tmp_path / "raw" / "data").iterdir()} == {"train.csv", "test.csv", "sample_submission.csv"}


def test_mlebench_public_links_out_are_not_copied(tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    prepared = tmp_path / "tiny" / "prepared"
    public, private = prepared / "public", prepared / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "description.md").write_text("# Tiny\n\nPredict y; scored by accuracy.\n")
    (public / "train.csv").write_text("id,x,y\n1,1,0\n2,2,1\n")
    (public / "test.csv").write_text("id,x\n3,3\n")
    (public / "sample_submission.csv").write_text("id,y\n3,0\n")
    (private / "test.csv").write_text("id,y\n3,1\n")
    (public / "passwd").symlink_to(secret)
    competition = load_competition(prepared)
    warnings = competition.prepare(tmp_path / "raw")
    assert not (tmp_path / "raw" / "data" / "passwd").exists() and (tmp_path / "raw" / "data" / "train.csv").is_file()
    assert len(warnings) == 1 and "public/passwd" in warnings[0]


def test_a_description_linking_outside_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    source = make_competition(tmp_path / "source")
    (source / "description.md").unlink()
    (source / "description.md").symlink_to(secret)
    with pytest.raises(AgentKError, match="description.md is a symbolic link"):
        load_competition(source)


# ---------------------------------------------------------------- a killed run's temp files


def leftovers(workspace: Path) -> list[Path]:
    made = [
        workspace / ".state.json.k2j4_x9a.tmp",  # atomic_write_text
        workspace / "submissions" / ".submission.csv.4242.tmp",  # the solver's writers
        workspace / "solve" / "candidates" / ".linear.csv.tmp",
    ]
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half a file")
    (workspace / ".raw.building" / "data").mkdir(parents=True)  # build_atomically
    return [*made, workspace / ".raw.building"]


def test_temp_files_of_a_killed_run_are_removed_on_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = make_competition(tmp_path / "source", "tiny")
    workspace = tmp_path / "root" / "tiny"
    left = leftovers(workspace)
    (workspace / "submissions" / "submission.csv").write_text("id,y\n40,0\n")
    (workspace / "notes.tmp").write_text("not one of ours")

    run_until_setup(source, tmp_path / "root", monkeypatch)

    assert not [p for p in left if p.exists()]
    assert (workspace / "submissions" / "submission.csv").read_text() == "id,y\n40,0\n"
    assert (workspace / "notes.tmp").read_text() == "not one of ours"


def test_temp_cleaning_leaves_the_competitions_data_alone(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    left = leftovers(workspace.root)
    data_file = workspace.raw / "data" / ".cache.v1.tmp"  # a competition's own file named like ours
    data_file.parent.mkdir(parents=True)
    data_file.write_text("data")
    removed = workspace.create()
    assert sorted(removed) == sorted(left) and not [p for p in left if p.exists()]
    assert data_file.read_text() == "data"


def test_every_writer_replaces_whole_files_and_leaves_no_temp_on_failure(tmp_path: Path) -> None:
    """`replacing` is the one atomic writer: the old file stays whole when the new one fails
    half-way, the temp file goes, and a finished write lands under its own name."""
    target = tmp_path / "deep" / "submission.csv"
    with replacing(target) as tmp:
        assert tmp.parent == target.parent and tmp.name.startswith(".submission.csv.") and tmp.name.endswith(".tmp")
        tmp.write_text("id,y\n1,0\n")
    assert target.read_text() == "id,y\n1,0\n"
    with pytest.raises(RuntimeError):
        with replacing(target) as tmp:
            tmp.write_text("id,y\n1,")
            raise RuntimeError("killed half-way")
    assert target.read_text() == "id,y\n1,0\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["submission.csv"]
