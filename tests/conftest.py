"""Shared test set-up, and how `make test` spreads the suite over pytest-xdist workers."""

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

# `make test`'s two workers share two cores: an OpenBLAS pool of two threads per worker spin-waits
# against the other worker (the blending tests' logistic stacker measured 2x the CPU, 6x the wall
# time at load 7). The solver already runs BLAS on one thread (solve_pipeline/solver.py); the tests
# that call the same code in-process now do too. Set before anything loads numpy; a worker's
# subprocesses inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# A fixture module that tests also import from: its asserts are rewritten like a test's.
pytest.register_assert_rewrite("tiny_campaign")

# Modules that share one costly session fixture, or a local Ray cluster, run on one worker, so the
# fixture is built once and no two Ray heads start side by side.
SHARED_GROUP = "tiny_campaign_and_ray"
SHARED_FIXTURE_MODULE = "tiny_campaign"
RAY_MODULES = {"test_campaign", "test_campaign_executors"}


def _shared_modules() -> set[str]:
    """Test modules that load the tiny campaign (`pytest_plugins = ["tiny_campaign"]`) or start Ray."""
    here = Path(__file__).resolve().parent
    users = {p.stem for p in here.glob("test_*.py") if SHARED_FIXTURE_MODULE in p.read_text(encoding="utf-8")}
    return users | RAY_MODULES


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `--dist loadgroup`, each test module is one unit of work (module fixtures, such as the
    end-to-end runs started together, are built once, on one worker), and the modules of
    `_shared_modules` are one unit together.

    A scheduler, not `xdist_group` marks: under pytest 9 xdist's renaming of marked tests no longer
    reaches their node ids, so marked modules were spread over every worker, each building the
    module's fixtures again (the end-to-end runs three times over)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shared = _shared_modules()
    root = config.rootpath

    @functools.cache
    def source(scope: str) -> str:
        path = root / scope
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def end_to_end(scope: str) -> bool:
        return "mark.integration" in source(scope)

    def browser(scope: str) -> bool:
        # Chromium may still be installing in the background (the Makefile's debian target).
        return "from browser import" in source(scope)

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_GROUP if Path(path).stem in shared else path

        def _assign_work_unit(self, node: Any) -> None:
            # The longest units first (the shared group, then modules of end-to-end runs, then by
            # count of tests): a long module handed out last keeps one worker busy while the
            # other has nothing left to do. The browser's end-to-end module comes after the others.
            scope = max(self.workqueue, key=lambda s: (s == SHARED_GROUP, end_to_end(s) and not browser(s),
                                                       end_to_end(s), len(self.workqueue[s])))
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With AGENTK_TEST_TIMES=FILE, every phase of every test appends its seconds to FILE as it
    ends (one JSON line, workers alike): where the suite's time goes is known before it finishes."""
    path = os.environ.get("AGENTK_TEST_TIMES")
    # Under xdist the controller hears every worker's report again (`report.node`): only the
    # worker that ran the test writes it, else every second was counted twice.
    if path and not hasattr(report, "node"):
        line = json.dumps({"test": report.nodeid, "when": report.when, "s": round(report.duration, 2),
                           "outcome": report.outcome, "worker": os.environ.get("PYTEST_XDIST_WORKER", "")})
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
