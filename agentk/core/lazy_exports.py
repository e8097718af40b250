"""A package's names imported on first use (PEP 562), so that importing the package stays cheap:
`agentk run` on a local folder needs neither the Kaggle client nor an LLM backend."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(namespace: dict[str, Any], module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of the package whose `globals()` is `namespace`: each name
    comes from the module `module_of` names for it (a full dotted path) and stays in the
    package's namespace after its first use."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
