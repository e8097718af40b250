"""Which of agentk's own modules, and which installed packages, an exported predictor needs.

Read from the source and the pickle, never by running them: the modules imported at module level
by the predictor's code and by the setup's generated code, followed through every module they
import; the classes the pickled predictor names (pickletools reads the stream without loading
it). Packages are pinned at the versions installed here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import pickletools
import sys
from pathlib import Path

# The top-level packages of agentk's source tree (pyproject's packages).
OWN_PACKAGES = ("agentk", "setup_pipeline", "unit_tests_setup", "solve_pipeline", "curriculum")


def source_root() -> Path:
    """The folder that holds agentk's packages (a checkout or site-packages)."""
    import solve_pipeline

    return Path(solve_pipeline.__file__).resolve().parent.parent


def _imports(tree: ast.AST, module: str, everywhere: bool) -> set[str]:
    """Dotted names imported by a module: its module-level statements (with `everywhere`, inside
    functions too); `from a import b` names both `a` and `a.b` (b may be a module)."""
    found: set[str] = set()
    nodes = ast.walk(tree) if everywhere else _module_level(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _module_level(tree: ast.AST) -> list[ast.AST]:
    """Statements that run on import: the body and the branches of module-level if/try blocks,
    never `if TYPE_CHECKING:` (annotations only) nor function bodies."""
    out: list[ast.AST] = []
    stack = list(getattr(tree, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
        else:
            out.append(node)
    return out


def _module_file(root: Path, name: str) -> Path | None:
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def closure(root: Path, modules: set[str], scripts: list[Path]) -> tuple[dict[str, Path], set[str]]:
    """agentk's modules needed by `modules` and by the `scripts` (their imports anywhere), with
    every parent package; and the top-level names of the other modules they import."""
    own: dict[str, Path] = {}
    external: set[str] = set()
    todo = set(modules)
    for script in scripts:
        todo |= _imports(ast.parse(script.read_text(encoding="utf-8")), "__main__", everywhere=True)
    while todo:
        name = todo.pop()
        top = name.split(".")[0]
        if not top or name in own:
            continue
        if top not in OWN_PACKAGES:
            external.add(top)
            continue
        path = _module_file(root, name)
        if path is None:
            continue  # `from package import name` where the name is no module
        own[name] = path
        parts = name.split(".")
        todo.update(".".join(parts[:i]) for i in range(1, len(parts)))
        module = name if path.name != "__init__.py" else name
        todo |= _imports(ast.parse(path.read_text(encoding="utf-8")), module, everywhere=False)
    return own, external


def pickled_modules(path: Path) -> set[str]:
    """The modules whose classes or functions a pickle names (read, never loaded)."""
    modules: set[str] = set()
    memo: dict[int, object] = {}
    pushed: list[object] = []
    with open(path, "rb") as handle:
        for opcode, arg, _ in pickletools.genops(handle):
            name = opcode.name
            if name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING"):
                pushed.append(arg)
            elif name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                pushed.append(memo.get(int(arg)))  # type: ignore[arg-type]
            elif name == "GLOBAL":
                modules.add(str(arg).split(" ")[0])
                pushed.append(None)
            elif name == "STACK_GLOBAL":
                if len(pushed) >= 2 and isinstance(pushed[-2], str):
                    modules.add(pushed[-2])
                pushed.append(None)
            elif name not in ("FRAME", "PROTO", "STOP", "PUT", "BINPUT", "LONG_BINPUT"):
                pushed.append(None)
    return modules


def requirements(tops: set[str]) -> list[str]:
    """`name==version` for the installed distributions that provide these top-level modules."""
    provided = importlib.metadata.packages_distributions()
    pins: set[str] = set()
    for top in sorted(tops):
        if top in sys.stdlib_module_names or top in OWN_PACKAGES:
            continue
        for dist in provided.get(top, []):
            try:
                pins.add(f"{dist}=={importlib.metadata.version(dist)}")
            except importlib.metadata.PackageNotFoundError:
                continue
    return sorted(pins, key=str.lower)
