"""Working memory: the named facts a prompt is built from, rendered as markdown sections.

Agent K's policy keeps a small set of entries (task summary, data view, plan, the last code and
its error, its own thoughts about the error) and re-renders them into every prompt. Entries are
bounded so one huge traceback or data dump cannot crowd the rest out of the context window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ENTRY_NAMES: tuple[str, ...] = (
    "TASK-SUMMARY",
    "DATA-VIEW",
    "MODALITIES",
    "PLAN",
    "PREVIOUS-CODE",
    "ERROR",
    "META-ERROR-THOUGHT",
    "CA-THOUGHT",
    "CODE",
    "CODE-OUTPUT",
    "TIPS",  # fixes of similar past errors (experience memory), last: nearest the goal
)
_CODE_ENTRIES = {"PREVIOUS-CODE", "CODE"}
_VERBATIM_ENTRIES = {"ERROR", "CODE-OUTPUT", "DATA-VIEW"}  # whitespace matters; fence them
_NAME_RE = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$")


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and the tail: a traceback's cause is at the end, a table's header at the start."""
    if len(text) <= max_chars:
        return text
    marker = f"\n… [truncated {len(text) - max_chars} chars] …\n"
    keep = max(0, max_chars - len(marker))
    head = keep // 2
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail else "")


class WorkingMemory:
    """Ordered named entries. Known names render in the canonical order, any other
    UPPER-KEBAB name after them in insertion order."""

    def __init__(self) -> None:
        self._entries: dict[str, str] = {}

    def set(self, name: str, text: str) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"memory entry names are UPPER-KEBAB (like {ENTRY_NAMES[0]}), got {name!r}")
        self._entries[name] = text

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._entries.get(name, default)

    def clear(self, *names: str) -> None:
        for name in names or tuple(self._entries):
            self._entries.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        known = [n for n in ENTRY_NAMES if n in self._entries]
        return known + [n for n in self._entries if n not in ENTRY_NAMES]

    def render(self, max_chars_per_entry: int = 4000, *, only: Iterable[str] | None = None) -> str:
        """Markdown: one `## NAME` section per non-empty entry; code fenced as python."""
        wanted = set(only) if only is not None else None
        sections: list[str] = []
        for name in self.names():
            if wanted is not None and name not in wanted:
                continue
            body = self._entries[name].strip("\n")
            if not body.strip():
                continue
            body = truncate_middle(body, max_chars_per_entry)
            if name in _CODE_ENTRIES:
                body = f"```python\n{body}\n```"
            elif name in _VERBATIM_ENTRIES:
                body = f"```\n{body}\n```"
            sections.append(f"## {name}\n\n{body}")
        return "\n\n".join(sections) + ("\n" if sections else "")
