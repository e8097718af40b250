"""The sandbox against real child processes: capture, failure, timeouts, limits, env, logs."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agentk.core.sandbox.sandbox import ExecutionResult, Limits, data_room_mb, run_python, scrubbed_env

FAST = Limits(timeout_s=20.0, grace_s=1.0)


def write_script(directory: Path, body: str, name: str = "script.py") -> str:
    (directory / name).write_text(textwrap.dedent(body))
    return name


# A process started inside the sandbox has a pid of its own namespace, which means nothing out
# here; it proves it is alive by appending to a file.
HEARTBEAT = "import sys, time\nwhile True:\n    open(sys.argv[1], 'a').write('.')\n    time.sleep(0.05)"


def stops_beating(path: Path, within_s: float = 5.0) -> bool:
    """Whether the heartbeat file stops growing (for 0.5 s) within `within_s`."""
    deadline = time.monotonic() + within_s
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        size = path.stat().st_size if path.exists() else 0
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            return True
        time.sleep(0.05)
    return False


def test_success_captures_stdout_and_stderr(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        import sys
        print("hello from the child")
        print("a warning", file=sys.stderr)
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST)
    assert result.ok
    assert result.returncode == 0 and not result.timed_out
    assert result.stdout == "hello from the child\n"
    assert result.stderr == "a warning\n"
    assert result.error_summary() == ""
    assert 0 < result.elapsed_s < 20


def test_runs_modules_with_the_current_interpreter(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "main.py").write_text(
        "import sys, agentk\nprint(sys.executable)\nprint(sys.argv[1:])\n"
    )
    result = run_python(["-m", "mypkg.main", "ws", "--flag"], cwd=tmp_path, limits=FAST)
    assert result.ok, result.error_summary()
    executable, argv = result.stdout.splitlines()
    assert executable == sys.executable  # so the venv's packages (agentk itself) import
    assert argv == "['ws', '--flag']"


def test_exception_gives_failed_result_with_the_exception_line(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        print("before the crash")
        def load():
            raise KeyError("target_column_missing")
        try:
            int("x")
        except ValueError:
            load()
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST)
    assert not result.ok
    assert result.returncode == 1 and not result.timed_out
    summary = result.error_summary()
    assert summary.splitlines()[-1] == "KeyError: 'target_column_missing'"
    # Only the last traceback of the chain, not the ValueError that preceded it.
    assert summary.startswith("Traceback (most recent call last):")
    assert "ValueError" not in summary
    assert len(result.error_summary(max_lines=2).splitlines()) == 2


def test_error_summary_falls_back_to_stderr_tail_and_exit_status() -> None:
    stderr = "".join(f"line {i}\n" for i in range(100))
    failed = ExecutionResult(returncode=3, stdout="", stderr=stderr, elapsed_s=0.1, timed_out=False)
    assert failed.error_summary(max_lines=5).splitlines() == [f"line {i}" for i in range(95, 100)]
    silent = ExecutionResult(returncode=3, stdout="", stderr="", elapsed_s=0.1, timed_out=False)
    assert "exited with code 3" in silent.error_summary()
    killed = ExecutionResult(returncode=-9, stdout="", stderr="", elapsed_s=0.1, timed_out=False)
    assert killed.error_summary() == "killed by signal SIGKILL"


def test_timeout_interrupts_a_busy_loop(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        print("started", flush=True)
        while True:
            pass
    """)
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=1.0, grace_s=2.0))
    assert result.timed_out and not result.ok
    assert result.stdout == "started\n"
    assert 1.0 <= result.elapsed_s < 10
    summary = result.error_summary()
    assert summary.startswith("timed out after 1 s")
    # SIGINT came first, so Python said where it was stuck.
    assert "KeyboardInterrupt" in summary


def test_timeout_kills_a_signal_ignoring_process_and_its_grandchild(tmp_path: Path) -> None:
    script = write_script(tmp_path, f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", {HEARTBEAT!r}, "grandchild.beat"])
        print("ready", flush=True)
        while True:
            time.sleep(0.1)
    """)
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=1.5, grace_s=0.5))
    assert result.timed_out
    assert result.returncode == -9  # only SIGKILL could end it
    assert result.stdout == "ready\n"
    assert stops_beating(tmp_path / "grandchild.beat")


def test_background_process_left_by_a_finished_run_is_killed(tmp_path: Path) -> None:
    script = write_script(tmp_path, f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", {HEARTBEAT!r}, "grandchild.beat"])
        while not os.path.exists("grandchild.beat"):
            time.sleep(0.02)
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST)
    assert result.ok and result.elapsed_s < 15  # did not wait on the orphan holding our pipes
    assert stops_beating(tmp_path / "grandchild.beat")


def test_memory_limit_fails_the_child_not_the_parent(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20, flush=True)
        block = bytearray(2 * 1024**3)
    """)
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=20, memory_mb=512))
    assert not result.ok and not result.timed_out
    assert result.stdout == "512\n"
    assert result.error_summary().splitlines()[-1] == "MemoryError"
    parent_block = bytearray(64 * 1024**2)  # the limit was the child's alone
    assert len(parent_block) == 64 * 1024**2


def test_default_memory_limit_allows_the_numeric_stack(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        import numpy as np, lightgbm, torch
        x = np.random.rand(500, 5)
        lightgbm.LGBMRegressor(n_estimators=5, verbose=-1).fit(x, x[:, 0])
        print(float(torch.ones(3).sum()))
    """)
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=60))
    assert result.ok, result.error_summary()
    assert result.stdout == "3.0\n"


def test_the_solvers_cap_leaves_room_for_data_beyond_the_default(tmp_path: Path) -> None:
    """A 4M-row table's arrays do not fit the default 8 GB of address space; the solver's cap adds
    the machine's memory (np.empty reserves the space without touching it)."""
    script = write_script(tmp_path, """
        import numpy as np
        block = np.empty(9 * 1024**3, dtype=np.uint8)
        print("held", flush=True)
    """)
    default = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=60))
    assert not default.ok and "Unable to allocate 9.00 GiB" in default.error_summary()
    roomy = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=60, memory_mb=data_room_mb()))
    assert roomy.ok and roomy.stdout == "held\n", roomy.error_summary()


def test_cpu_limit_stops_a_spinning_child(tmp_path: Path) -> None:
    script = write_script(tmp_path, "while True:\n    pass\n")
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=15, cpu_s=1))
    assert not result.timed_out
    assert result.returncode == -signal.SIGXCPU
    assert result.error_summary() == "killed by signal SIGXCPU"


def test_child_sees_no_secrets_and_home_is_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("KAGGLE_KEY", "KAGGLE_USERNAME", "OPENAI_API_KEY", "HF_TOKEN", "SOME_UNLISTED_VAR"):
        monkeypatch.setenv(key, "leaked-value")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    script = write_script(tmp_path, """
        import json, os
        print(json.dumps(dict(os.environ)))
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST, env_extra={"AGENTK_STAGE": "plan"})
    assert result.ok, result.error_summary()
    env = json.loads(result.stdout)
    assert "leaked-value" not in result.stdout
    for key in ("KAGGLE_KEY", "KAGGLE_USERNAME", "OPENAI_API_KEY", "HF_TOKEN", "SOME_UNLISTED_VAR"):
        assert key not in env
    assert Path(env["HOME"]) == tmp_path.resolve()
    assert env["OMP_NUM_THREADS"] == "3"
    assert env["AGENTK_STAGE"] == "plan"
    assert env["MPLBACKEND"] == "Agg" and env["HF_HUB_OFFLINE"] == "1"
    assert env["PYTHONNOUSERSITE"] == "1" and env["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize("key", ["KAGGLE_KEY", "OPENAI_BASE_URL", "MY_API_KEY", "GITHUB_TOKEN",
                                 "db_password", "AWS_REGION", "HF_TOKEN", "CLIENT_SECRET"])
def test_env_extra_with_a_secret_looking_key_is_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        run_python(["-c", "pass"], cwd=tmp_path, env_extra={key: "x"})
    with pytest.raises(ValueError):
        scrubbed_env({key: "x"})


def test_missing_cwd_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        run_python(["-c", "pass"], cwd=tmp_path / "nope")
    assert not (tmp_path / "nope").exists()


def test_cwd_is_respected(tmp_path: Path) -> None:
    work = tmp_path / "setup"
    work.mkdir()
    result = run_python(["-c", "open('out.txt', 'w').write('made here')"], cwd=work, limits=FAST)
    assert result.ok, result.error_summary()
    assert (work / "out.txt").read_text() == "made here"
    assert not (Path.cwd() / "out.txt").exists()


def test_output_truncation_keeps_head_and_tail(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        import sys
        for i in range(20000):
            print(f"out {i:05d}")
            print(f"err {i:05d}", file=sys.stderr)
    """)
    result = run_python([script], cwd=tmp_path, limits=Limits(timeout_s=20, max_output_chars=1000))
    assert result.ok
    for stream, tag in ((result.stdout, "out"), (result.stderr, "err")):
        assert stream.startswith(f"{tag} 00000\n{tag} 00001\n")
        assert stream.endswith(f"{tag} 19999\n")
        assert "characters truncated" in stream
        assert len(stream) < 1100


def test_binary_garbage_is_decoded_with_replacement(tmp_path: Path) -> None:
    script = write_script(tmp_path, """
        import sys
        sys.stdout.buffer.write(b"ok \\xff\\xfe\\x00 bytes\\n")
        sys.stderr.buffer.write(bytes(range(256)))
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST)
    assert result.ok
    assert result.stdout.startswith("ok ") and "\ufffd" in result.stdout
    assert "\ufffd" in result.stderr


def test_stdout_lines_stream_to_the_callback_as_they_come(tmp_path: Path) -> None:
    # The child waits for a file only the callback creates: it can finish only if lines
    # reached us while it was still running.
    script = write_script(tmp_path, """
        import json, os, time
        for step in range(3):
            print(json.dumps({"event": "step", "n": step}))
        deadline = time.time() + 15
        while not os.path.exists("ack") and time.time() < deadline:
            time.sleep(0.01)
        print(json.dumps({"event": "done", "acked": os.path.exists("ack")}))
    """)
    seen: list[dict[str, object]] = []

    def on_line(line: str) -> None:
        seen.append(json.loads(line))
        if len(seen) == 3:
            (tmp_path / "ack").write_text("")

    result = run_python([script], cwd=tmp_path, limits=FAST, on_stdout_line=on_line)
    assert result.ok, result.error_summary()
    assert seen == [{"event": "step", "n": 0}, {"event": "step", "n": 1}, {"event": "step", "n": 2},
                    {"event": "done", "acked": True}]
    assert result.stdout.count("\n") == 4


def test_failing_callback_does_not_stall_the_child(tmp_path: Path) -> None:
    def on_line(line: str) -> None:
        raise RuntimeError("console broke")

    result = run_python(["-c", "for i in range(50000): print(i)"], cwd=tmp_path, limits=FAST,
                        on_stdout_line=on_line)
    assert result.ok and result.stdout.endswith("49999\n")


def test_log_files_are_written(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    script = write_script(tmp_path, """
        import sys
        print("to stdout")
        sys.exit("fatal: to stderr")
    """)
    result = run_python([script], cwd=tmp_path, limits=FAST, log_prefix=logs / "attempt_1")
    assert result.returncode == 1
    assert (logs / "attempt_1.stdout.txt").read_text() == "to stdout\n"
    assert (logs / "attempt_1.stderr.txt").read_text() == "fatal: to stderr\n"
    assert result.error_summary() == "fatal: to stderr"


def test_parent_keyboard_interrupt_kills_the_group_and_reraises(tmp_path: Path) -> None:

    script = write_script(tmp_path, f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", {HEARTBEAT!r}, "grandchild.beat"])
        subprocess.Popen([sys.executable, "-c", {HEARTBEAT!r}, "child.beat"]).wait()
    """)

    def interrupt_once_started() -> None:
        deadline = time.monotonic() + 15
        while not (tmp_path / "child.beat").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    # pytest itself may run with SIGINT ignored (started as a background job); Ctrl-C must work here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_once_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_python([script], cwd=tmp_path, limits=FAST)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert stops_beating(tmp_path / "grandchild.beat") and stops_beating(tmp_path / "child.beat")


def test_a_child_writing_past_its_disk_quota_is_stopped_and_says_why(tmp_path: Path) -> None:
    """Many small files (each under RLIMIT_FSIZE) past the cap on the folders' growth: stopped
    within a watch interval or two; files there before the run do not count."""
    (tmp_path / "earlier.bin").write_bytes(b"x" * (3 << 20))  # a resumed run's own files
    body = """
        import time
        for i in range(400):
            open(f"part{i}.bin", "wb").write(b"y" * (1 << 20))
            time.sleep(0.02)
        print("wrote everything")
    """
    result = run_python([write_script(tmp_path, body)], cwd=tmp_path,
                        limits=Limits(timeout_s=60, grace_s=1.0, max_written_mb=20))
    assert not result.ok and result.written_over_mb == 20
    assert "wrote everything" not in result.stdout
    assert result.error_summary().startswith("stopped: it wrote more than 20 MB into its folders")
    assert len(list(tmp_path.glob("part*.bin"))) < 400

    calm = run_python(["-c", "open('small.bin', 'wb').write(b'z' * 1024)"], cwd=tmp_path,
                      limits=Limits(timeout_s=60, max_written_mb=20))
    assert calm.ok and calm.written_over_mb is None


def test_the_disk_quota_follows_the_data(tmp_path: Path) -> None:
    from agentk.core.sandbox.disk_quota import QUOTA_FACTOR, QUOTA_FLOOR_MB, quota_mb

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "small.csv").write_bytes(b"a" * 1000)
    assert quota_mb(tmp_path / "data") == QUOTA_FLOOR_MB
    with open(tmp_path / "data" / "big.bin", "wb") as handle:
        handle.truncate(300 << 20)  # sparse: counts by size, costs no disk
    assert quota_mb(tmp_path / "data") == QUOTA_FACTOR * ((300 << 20) + 1000) >> 20


def test_the_disk_watch_counts_each_folder_once(tmp_path: Path) -> None:
    from agentk.core.sandbox.disk_quota import DiskWatch

    inner = tmp_path / "solve" / "cache"
    inner.mkdir(parents=True)
    watch = DiskWatch([tmp_path / "solve", tmp_path / "solve", inner], cap_mb=1)
    (inner / "a.bin").write_bytes(b"q" * 5000)
    assert watch.folders == [(tmp_path / "solve").resolve()] and watch.written() == 5000
