"""What a sandboxed child sees of a workspace: its data read-only, its own folder writable, nothing
else (the logs, the LLM cache, the state, the rest of the disk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentk.core.sandbox.isolation import Mounts, isolation_status
from agentk.core.sandbox.sandbox import Limits, run_python

pytestmark = pytest.mark.skipif(not isolation_status().available, reason=isolation_status().reason)

PROBE = """
import json, os, sys
seen = {}
for path in sys.argv[1:]:
    entry = {"exists": os.path.exists(path)}
    if os.path.isfile(path):
        try:
            entry["read"] = open(path).read()
        except OSError as exc:
            entry["read"] = type(exc).__name__
        try:
            open(path, "a").write("tampered")
            entry["write"] = "ok"
        except OSError as exc:
            entry["write"] = type(exc).__name__
    seen[path] = entry
try:
    open("mine.txt", "w").write("written inside")
    seen["cwd_write"] = "ok"
except OSError as exc:
    seen["cwd_write"] = type(exc).__name__
print(json.dumps(seen))
"""


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for name, text in {"raw/data/train.csv": "id,y\n1,0\n", "setup/plan.json": "{}", "logs/events.jsonl": "{\"source\": \"/x\"}\n",
                       "llm_cache/a.json": "{}", "state.json": "{}", "solve/.keep": ""}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def probe(cwd: Path, mounts: Mounts, *paths: Path) -> dict:
    result = run_python(["-c", PROBE, *map(str, paths)], cwd=cwd, limits=Limits(timeout_s=60), mounts=mounts)
    assert result.ok, result.stderr
    return json.loads(result.stdout)


def test_the_solver_reads_data_and_setup_writes_solve_and_sees_no_logs(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen = probe(root / "solve", Mounts.workspace(root, write=["solve"]), root / "raw/data/train.csv",
                 root / "setup/plan.json", root / "logs/events.jsonl", root / "llm_cache/a.json", root / "state.json")
    train, plan = seen[str(root / "raw/data/train.csv")], seen[str(root / "setup/plan.json")]
    assert train["read"] == "id,y\n1,0\n" and train["write"] != "ok"
    assert plan["read"] == "{}" and plan["write"] != "ok"
    for hidden in ("logs/events.jsonl", "llm_cache/a.json", "state.json"):
        assert not seen[str(root / hidden)]["exists"], hidden
    assert seen["cwd_write"] == "ok" and (root / "solve" / "mine.txt").read_text() == "written inside"
    assert (root / "raw/data/train.csv").read_text() == "id,y\n1,0\n"


def test_a_setup_stage_writes_setup_only(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    seen = probe(root / "setup", Mounts.workspace(root, write=["setup"]), root / "setup/plan.json",
                 root / "raw/data/train.csv", root / "solve/.keep")
    assert seen[str(root / "setup/plan.json")]["write"] == "ok"
    assert seen[str(root / "raw/data/train.csv")]["write"] != "ok"
    assert not seen[str(root / "solve/.keep")]["exists"]


def test_the_rest_of_the_disk_is_not_there(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("private")
    seen = probe(root / "solve", Mounts.workspace(root, write=["solve"]), secret, Path.home() / ".bashrc", Path("/etc/passwd"))
    assert not seen[str(secret)]["exists"]
    assert not seen[str(Path.home() / ".bashrc")]["exists"]
    assert not seen["/etc/passwd"]["exists"]


def test_device_files_appear_only_when_named(tmp_path: Path) -> None:
    """A GPU's device files reach the solver this way (`--dev-bind`); a file outside every mount
    stands in for one, so the check runs on any machine."""
    named = tmp_path / "nvidia0"
    named.write_text("a device stand-in")
    root = workspace(tmp_path)
    hidden = probe(root / "solve", Mounts.workspace(root, write=["solve"]), named)
    assert hidden[str(named)]["exists"] is False
    plain = Mounts.workspace(root, write=["solve"])
    shown = probe(root / "solve", Mounts(plain.read, plain.write, devices=(named,)), named)
    assert shown[str(named)]["exists"] is True and shown[str(named)]["read"] == "a device stand-in"


def test_the_sandbox_user_has_a_name_without_a_passwd_entry(tmp_path: Path) -> None:
    """uid 1000 has no passwd entry inside (/etc/passwd is not shown); libraries that ask who runs
    them (torch's compile cache, through getpass) get a name rather than a KeyError."""
    code = "import getpass, os, pwd\ntry:\n    pwd.getpwuid(os.getuid()); print('entry')\nexcept KeyError:\n    print('no entry')\nprint(getpass.getuser())"
    result = run_python(["-c", code], cwd=tmp_path, limits=Limits(timeout_s=60))
    assert result.ok, result.stderr
    assert result.stdout.split() == ["no", "entry", "sandbox"]
