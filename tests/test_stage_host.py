"""The warm stage host against real sandboxed processes: scripts in a row, timeouts, leftovers, a
stage that kills the host, limits, the disk quota; each stage's answer is run_python's."""

from __future__ import annotations

import signal
import textwrap
from pathlib import Path

import pytest

from agentk.core.sandbox.isolation import Mounts, isolation_status
from agentk.core.sandbox.sandbox import Limits, run_python
from agentk.core.sandbox.stage_host import NO_HOST_ENV, StageHost
from tests.test_sandbox import HEARTBEAT, stops_beating

pytestmark = pytest.mark.skipif(not isolation_status().available, reason=isolation_status().reason)

FAST = Limits(timeout_s=30.0, grace_s=1.0)


def host(folder: Path) -> StageHost:
    return StageHost(folder, Mounts.of(write=[folder]), preload=("json",))


def script(folder: Path, name: str, body: str) -> str:
    (folder / name).write_text(textwrap.dedent(body))
    return name


def test_runs_scripts_in_a_row_with_their_outputs_codes_and_logs(tmp_path: Path) -> None:
    first = script(tmp_path, "first.py", """
        import sys
        from pathlib import Path
        print("first", sys.argv[1:], __name__, Path(__file__).name)
        print("to stderr", file=sys.stderr)
        Path("made.txt").write_text("x")
        sys.exit(3)
    """)
    second = script(tmp_path, "second.py", """
        import os
        print("second sees", sorted(os.listdir(".")))
        def fail():
            raise ValueError("broken on purpose")
        fail()
    """)
    with host(tmp_path) as stages:
        one = stages.run([first, "an-arg"], limits=FAST, log_prefix=tmp_path / "logs" / "stage_first")
        two = stages.run([second], limits=FAST, log_prefix=tmp_path / "logs" / "stage_second")
        assert stages.active  # both ran in the host, not in a fallback
    assert (one.returncode, one.stdout, one.stderr) == (3, "first ['an-arg'] __main__ first.py\n", "to stderr\n")
    assert not one.ok and not one.timed_out
    assert (tmp_path / "logs" / "stage_first.stdout.txt").read_text() == one.stdout
    assert (tmp_path / "logs" / "stage_second.stderr.txt").read_text() == two.stderr
    assert two.returncode == 1 and "made.txt" in two.stdout
    # The traceback is the script's own, as `python -u second.py` prints it.
    assert two.stderr.startswith("Traceback (most recent call last):\n  File \"")
    assert "stage_serve" not in two.stderr and "ValueError: broken on purpose" in two.error_summary()


def test_a_timed_out_stage_shows_where_it_was_and_the_next_runs(tmp_path: Path) -> None:
    stuck = script(tmp_path, "stuck.py", """
        import time
        print("started", flush=True)
        while True:
            time.sleep(0.05)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        slow = stages.run([stuck], limits=Limits(timeout_s=2.0, grace_s=1.0))
        after = stages.run([fine], limits=FAST)
        assert stages.active
    assert slow.timed_out and slow.returncode == -signal.SIGINT and slow.stdout == "started\n"
    assert "KeyboardInterrupt" in slow.stderr and "stuck.py" in slow.stderr
    assert "timed out after 2 s" in slow.error_summary()
    assert after.ok and after.stdout == "fine\n"


def test_nothing_a_stage_started_outlives_it(tmp_path: Path) -> None:
    (tmp_path / "beat.py").write_text(HEARTBEAT)
    leaves = script(tmp_path, "leaves.py", """
        import os, subprocess, sys, time
        # A daemon of its own session (out of the stage's group) and a plain child.
        subprocess.Popen([sys.executable, "beat.py", "daemon.txt"], start_new_session=True)
        subprocess.Popen([sys.executable, "beat.py", "child.txt"])
        while not (os.path.exists("daemon.txt") and os.path.exists("child.txt")):
            time.sleep(0.02)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([leaves], limits=FAST)
        assert result.ok
        assert stops_beating(tmp_path / "daemon.txt", within_s=1.0)
        assert stops_beating(tmp_path / "child.txt", within_s=1.0)
        assert stages.run([fine], limits=FAST).ok and stages.active


def test_a_stage_that_kills_the_host_runs_again_in_a_fresh_sandbox(tmp_path: Path) -> None:
    killer = script(tmp_path, "killer.py", """
        import os, signal, time
        os.kill(os.getppid(), signal.SIGKILL)  # the host; under run_python the namespace's init, which ignores it
        time.sleep(0.5)
        print("survived")
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([killer], limits=FAST, log_prefix=tmp_path / "stage_killer")
        assert not stages.active  # given up: the rest of the setup runs as before the host
        after = stages.run([fine], limits=FAST)
    assert result.ok and result.stdout == "survived\n"
    assert (tmp_path / "stage_killer.stdout.txt").read_text() == "survived\n"
    assert after.ok and after.stdout == "fine\n"


def test_memory_and_cpu_limits_fail_the_stage_not_the_host(tmp_path: Path) -> None:
    hungry = script(tmp_path, "hungry.py", "block = bytearray(2 << 30)\n")
    spinning = script(tmp_path, "spinning.py", "while True:\n    pass\n")
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        assert stages.run([fine], limits=FAST).ok
        memory = stages.run([hungry], limits=Limits(timeout_s=30.0, grace_s=1.0, memory_mb=1024))
        cpu = stages.run([spinning], limits=Limits(timeout_s=60.0, grace_s=1.0, cpu_s=1))
        after = stages.run([fine], limits=FAST)
        assert stages.active
    assert memory.returncode == 1 and "MemoryError" in memory.stderr
    assert cpu.returncode == -signal.SIGXCPU and not cpu.timed_out
    assert after.ok


def test_the_disk_quota_stops_a_stage(tmp_path: Path) -> None:
    writer = script(tmp_path, "writer.py", """
        import time
        with open("big.bin", "wb") as handle:
            handle.write(b"x" * (3 << 20))
        time.sleep(60)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([writer], limits=Limits(timeout_s=30.0, grace_s=1.0, max_written_mb=1))
        assert stages.run([fine], limits=FAST).ok
    assert result.written_over_mb == 1 and not result.ok and not result.timed_out


def test_switched_off_it_runs_each_stage_in_run_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NO_HOST_ENV, "1")
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        assert stages.run([fine], limits=FAST).stdout == "fine\n"
        assert not stages.active


# ---- the run's solve host: modules, live output, the solver's limits (agentk/solve_sandbox.py) ----

def package(folder: Path, modules: dict[str, str]) -> None:
    """A package `tools` in `folder` (the children's working folder, first on their sys.path)."""
    (folder / "tools").mkdir(exist_ok=True)
    (folder / "tools" / "__init__.py").write_text("")
    for name, body in modules.items():
        (folder / "tools" / f"{name}.py").write_text(textwrap.dedent(body))


def test_modules_run_as_python_m_runs_them_even_when_preloaded(tmp_path: Path) -> None:
    package(tmp_path, {
        "show": """
            import os, sys
            if __name__ == "__main__":
                print(__name__, sys.argv[1:], os.path.basename(sys.argv[0]), sys.path[0] == os.getcwd())
                print(os.environ.get("FROM_THE_RUN"))
                sys.exit(4)
        """,
        "broken": """
            def fail():
                raise ValueError("broken module")
            fail()
        """,
    })
    # Preloaded as the solve host preloads the solver: the child must still run it as __main__.
    with StageHost(tmp_path, Mounts.of(write=[tmp_path]), preload=("tools.show",), env_extra={"FROM_THE_RUN": "yes"}) as stages:
        shown = stages.run(["-m", "tools.show", "a", "--b"], limits=FAST, log_prefix=tmp_path / "logs" / "show")
        broken = stages.run(["-m", "tools.broken"], limits=FAST)
        assert stages.active
    fresh = run_python(["-m", "tools.show", "a", "--b"], cwd=tmp_path, limits=FAST, env_extra={"FROM_THE_RUN": "yes"})
    assert (shown.returncode, shown.stdout) == (4, "__main__ ['a', '--b'] show.py True\nyes\n")
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (shown.returncode, shown.stdout, shown.stderr)
    assert (tmp_path / "logs" / "show.stdout.txt").read_text() == shown.stdout
    assert broken.returncode == 1 and "ValueError: broken module" in broken.error_summary()
    assert "stage_serve" not in broken.stderr and "RuntimeWarning" not in broken.stderr + shown.stderr


def test_each_stdout_line_reaches_the_callback_while_the_child_runs(tmp_path: Path) -> None:
    # The child waits for a file the callback writes on its first line: it only finishes if the
    # line arrived live, not at the end.
    package(tmp_path, {"talk": """
        import os, time
        print('{"event": "start"}', flush=True)
        deadline = time.monotonic() + 20
        while not os.path.exists("heard") and time.monotonic() < deadline:
            time.sleep(0.02)
        print("heard" if os.path.exists("heard") else "not heard")
    """})
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        (tmp_path / "heard").touch()

    with host(tmp_path) as stages:
        result = stages.run(["-m", "tools.talk"], limits=FAST, on_stdout_line=on_line)
        assert stages.active
    assert result.ok and lines == ['{"event": "start"}', "heard"]


def test_a_host_started_with_the_solvers_limits_gives_each_child_its_own(tmp_path: Path) -> None:
    package(tmp_path, {"room": """
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20 if resource.getrlimit(resource.RLIMIT_AS)[0] >= 0 else None)
    """})

    def rooms(stages: StageHost) -> list[str]:
        # The probe's and light solve's cap first, then the solver's bigger one, then none (a GPU's).
        sizes = [stages.run(["-m", "tools.room"], limits=Limits(timeout_s=30.0, memory_mb=mb)).stdout.strip()
                 for mb in (2048, 6144, None)]
        assert stages.active
        return sizes

    with StageHost(tmp_path, Mounts.of(write=[tmp_path]), host_limits=Limits(memory_mb=None)) as solve_host:
        assert rooms(solve_host) == ["2048", "6144", "None"]
    # Started with its first child's limits, a host could never give the solver more.
    with host(tmp_path) as stage_host:
        assert rooms(stage_host) == ["2048", "2048", "2048"]


def test_a_module_that_kills_the_host_runs_again_in_run_python_with_its_callback(tmp_path: Path) -> None:
    package(tmp_path, {"killer": """
        import os, signal, time
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(0.5)
        print("survived", os.environ.get("FROM_THE_RUN"))
    """})
    lines: list[str] = []
    with StageHost(tmp_path, Mounts.of(write=[tmp_path]), env_extra={"FROM_THE_RUN": "yes"}) as stages:
        stages.start()
        assert stages.active
        result = stages.run(["-m", "tools.killer"], limits=FAST, on_stdout_line=lines.append,
                            log_prefix=tmp_path / "killer")
        assert not stages.active
        again = stages.run(["-m", "tools.killer"], limits=FAST)
    assert result.ok and result.stdout == "survived yes\n" and lines[-1] == "survived yes"
    assert (tmp_path / "killer.stdout.txt").read_text() == "survived yes\n"
    assert again.ok


def test_switched_off_modules_and_callbacks_go_to_run_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NO_HOST_ENV, "1")
    package(tmp_path, {"hello": "print('hello')\n"})
    lines: list[str] = []
    with host(tmp_path) as stages:
        stages.start()
        assert stages.run(["-m", "tools.hello"], limits=FAST, on_stdout_line=lines.append).stdout == "hello\n"
        assert not stages.active
    assert lines == ["hello"]
