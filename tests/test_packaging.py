"""`pip install .` alone gives a working agentk: every third-party module the package imports is
declared in pyproject.toml (an undeclared one fails here in seconds, not in a user's fresh venv),
what an extra provides is imported only where it is used, and the solver runs without HEBO, which
that install leaves out. `make check-install` proves the same end to end (CI runs it)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from solve_pipeline.race.hebo_tool import HEBO_INSTALL, hebo_missing

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentk", "setup_pipeline", "unit_tests_setup", "solve_pipeline", "curriculum")
# Imports a plain install leaves out on purpose: the extra that brings each, or None for a module
# that runs in its own venv (the AutoGluon rival, `make autogluon`) or is used only where the user
# has it (timm, for the user's own image models).
OPTIONAL = {"hebo": "hebo", "torchvision": "vision", "ray": "ray", "autogluon": None, "timm": None}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalise(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group())


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imports() -> dict[str, dict[str, bool]]:
    """Third-party top-level module -> {file: imported at module level (not inside a function)}."""
    local = set(PACKAGES) | set(sys.stdlib_module_names) | {"__future__"}
    found: dict[str, dict[str, bool]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            in_function = {id(inner) for node in ast.walk(tree)
                           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                           for inner in ast.walk(node) if inner is not node}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {name.split(".")[0] for name in names} - local:
                    files = found.setdefault(top, {})
                    where = str(path.relative_to(ROOT))
                    files[where] = files.get(where, False) or id(node) not in in_function
    return found


def test_every_imported_module_is_declared() -> None:
    declared = {_requirement_name(r) for r in _project()["dependencies"]}
    distributions = packages_distributions()
    undeclared = []
    for module, files in sorted(_imports().items()):
        if module in OPTIONAL:
            continue
        providers = {_normalise(d) for d in distributions.get(module, [])}
        if not providers & declared:
            undeclared.append(f"{module} ({', '.join(sorted(providers)) or 'not installed'}; "
                              f"imported by {', '.join(sorted(files))})")
    assert not undeclared, "imported but not in pyproject's dependencies: " + "; ".join(undeclared)


def test_optional_modules_come_from_an_extra_and_load_lazily() -> None:
    extras = _project()["optional-dependencies"]
    imports = _imports()
    for module, extra in OPTIONAL.items():
        assert extra is None or extra in extras, f"{module}: no [{extra}] extra in pyproject"
        at_module_level = sorted(f for f, top in imports.get(module, {}).items() if top)
        assert not at_module_level, f"a plain install cannot import {', '.join(at_module_level)}: " \
                                    f"{module} must be imported where it is used"


def test_hebo_extra_lists_what_hebo_runs_on() -> None:
    hebo = {_requirement_name(r) for r in _project()["optional-dependencies"]["hebo"]}
    assert hebo == {"gpytorch", "linear-operator", "pymoo", "disjoint-set"}
    assert "hebo==0.3.6" in (ROOT / "Makefile").read_text()  # installed apart, with --no-deps


def test_without_hebo_tuning_is_skipped_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hebo", None)  # what an import of an absent package meets
    monkeypatch.setitem(sys.modules, "hebo.optimizers.hebo", None)
    reason = hebo_missing()
    assert reason is not None and "HEBO is not installed" in reason and HEBO_INSTALL in reason
