"""A campaign's pool: the competitions a user names (folders, a folder of them, a list file, a
Kaggle search) expanded into tasks, one per competition, each keyed as its workspace is named.

    titanic/                        one competition folder
    ../shared/competitions          every competition folder directly under it, sorted
    tasks.txt                       one spec a line (URLs, slugs, folders relative to the file), # comments
    kaggle:playground               a Kaggle search: kaggle:CATEGORY, kaggle:CATEGORY:TEXT, kaggle::TEXT
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentk.core.records.campaign_record import TaskKind
from agentk.core.errors import AgentKError
from agentk.kaggle.client import KaggleClient
from agentk.kaggle.reference import competition_url, parse_competition_reference
from agentk.sources import load_competition

KAGGLE_PREFIX = "kaggle:"
# A search with no --limit stops here: Kaggle lists thousands of closed competitions.
DEFAULT_SEARCH_LIMIT = 100

# A comment starts a line or follows a space; a URL's #fragment is not one.
_COMMENT = re.compile(r"(^|\s)#.*")


@dataclass(frozen=True)
class PoolTask:
    """One competition of the pool."""

    key: str  # unique and stable: the campaign's task key and the workspace's name
    source: str  # what `agentk run` accepts: an absolute folder path or a Kaggle URL
    kind: TaskKind
    slug: str | None = None  # a Kaggle task's slug; None for a folder (its runs are never sent to Kaggle)


@dataclass(frozen=True)
class PoolExpansion:
    tasks: tuple[PoolTask, ...]
    # What was left out and why, one line each, worded to follow "skipped: " (the user sees each once).
    warnings: tuple[str, ...]


def expand_pool(specs: Sequence[str], *, limit: int | None = None,
                client: KaggleClient | None = None) -> PoolExpansion:
    """The tasks `specs` name, in the order given, duplicates dropped (the first kept), at most
    `limit`; any spec that names nothing usable is an AgentKError with one line saying why.
    `client` is made only when a Kaggle search needs it (URLs and slugs need no credentials here)."""
    if limit is not None and limit < 1:
        raise AgentKError(f"the pool limit must be at least 1, not {limit}")
    if not specs:
        raise AgentKError("no competitions given: name folders, a task list file or a kaggle: search")
    pool = _Pool(limit, client)
    for spec in specs:
        pool.add_spec(spec, Path.cwd(), seen_files=frozenset())
    tasks = pool.tasks[:limit] if limit is not None else pool.tasks
    if len(pool.tasks) > len(tasks):
        pool.warnings.append(f"{len(pool.tasks) - len(tasks)} competitions past the first {limit} of "
                             f"{len(pool.tasks)} (--limit)")
    if not tasks:
        raise AgentKError(f"no competitions found in {', '.join(specs)}")
    return PoolExpansion(tuple(tasks), tuple(pool.warnings))


@dataclass
class _Pool:
    limit: int | None
    client: KaggleClient | None
    tasks: list[PoolTask] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _origins: dict[str, str] = field(default_factory=dict)  # key -> the spec that brought it first

    def add_spec(self, spec: str, base: Path, seen_files: frozenset[Path]) -> None:
        text = spec.strip()
        if not text:
            raise AgentKError("an empty competition spec")
        if text.startswith(KAGGLE_PREFIX):
            return self._search(text)
        path = Path(text).expanduser()
        path = path if path.is_absolute() else base / path
        if path.is_dir():
            return self._folder(path)
        if path.is_file():
            return self._list_file(path, seen_files)
        slug = parse_competition_reference(text)
        if slug is not None:
            return self._add(PoolTask(slug, competition_url(slug), "kaggle", slug), text)
        raise AgentKError(f"not found: {path} (neither a folder, a task list file, a Kaggle URL or slug, "
                          "nor a kaggle: search)")

    # ---- specs

    def _folder(self, folder: Path) -> None:
        """A competition folder, or a folder of them (each direct child that is one, sorted)."""
        folder = folder.resolve()
        try:
            self._add_competition(folder)
            return
        except AgentKError as not_one:
            reason = str(not_one)
        children = sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith("."))
        found = 0
        for child in children:
            try:
                self._add_competition(child)
                found += 1
            except AgentKError as exc:
                self.warnings.append(f"{child}: {exc}")
        if not found:
            # Nothing here at all: the folder's own reason is the useful one (e.g. "missing data/").
            detail = reason if not children else f"none of its {len(children)} folders is a competition"
            raise AgentKError(f"no competitions found in {folder}: {detail}")

    def _add_competition(self, folder: Path) -> None:
        competition = load_competition(folder)
        self._add(PoolTask(competition.id, str(folder), "folder"), str(folder))

    def _list_file(self, file: Path, seen_files: frozenset[Path]) -> None:
        """One spec a line; relative paths are the file's folder's; blank lines and # comments skipped."""
        file = file.resolve()
        if file in seen_files:
            raise AgentKError(f"{file} lists itself (through {len(seen_files)} task list files)")
        try:
            lines = file.read_text(encoding="utf-8-sig").splitlines()
        except (UnicodeDecodeError, OSError) as exc:
            raise AgentKError(f"{file} is not a readable text file of tasks: {type(exc).__name__}") from None
        specs = [(n, _COMMENT.sub("", line).strip()) for n, line in enumerate(lines, 1)]
        specs = [(n, spec) for n, spec in specs if spec]
        if not specs:
            raise AgentKError(f"no competitions found in {file}: every line is blank or a # comment")
        for number, spec in specs:
            try:
                self.add_spec(spec, file.parent, seen_files | {file})
            except AgentKError as exc:
                raise AgentKError(f"{file}, line {number}: {exc}") from None

    def _search(self, spec: str) -> None:
        category, _, search = spec[len(KAGGLE_PREFIX):].partition(":")
        category, search = category.strip() or None, search.strip()
        wanted = self.limit or DEFAULT_SEARCH_LIMIT
        if self.client is None:
            self.client = KaggleClient()
        slugs = self.client.search(category, search, wanted)
        if not slugs:
            raise AgentKError(f"no Kaggle competition matches {spec!r}")
        if self.limit is None and len(slugs) >= DEFAULT_SEARCH_LIMIT:
            self.warnings.append(f"{spec}: any competitions Kaggle lists past its first {DEFAULT_SEARCH_LIMIT} "
                                 "(--limit sets another number)")
        for slug in slugs:
            self._add(PoolTask(slug, competition_url(slug), "kaggle", slug), spec)

    def _add(self, task: PoolTask, origin: str) -> None:
        first = self._origins.get(task.key)
        if first is None:
            self._origins[task.key] = origin
            self.tasks.append(task)
            return
        kept = next(t for t in self.tasks if t.key == task.key)
        if kept.source != task.source:  # the same name from elsewhere: one workspace, so the first wins
            self.warnings.append(f"{task.source} (from {origin}): {task.key} is already in the pool "
                                 f"as {kept.source} (from {first})")
