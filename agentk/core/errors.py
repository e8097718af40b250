"""Errors that reach the user as one clear line (the CLI prints `str(error)` and exits non-zero)."""


class AgentKError(Exception):
    """Base class: anything the user can act on, shown without a traceback."""


class SourceError(AgentKError):
    """The competition folder cannot be read as any known layout."""


class GradingError(AgentKError):
    """Answers or grading facts are missing or inconsistent."""


class InvalidSubmissionError(AgentKError):
    """A submission does not match the expected format."""


class SetupFailed(AgentKError):
    """The setup MDP ran out of budget (or a policy declined) before all checks passed."""


class SolveFailed(AgentKError):
    """The solver could not produce a valid submission."""


class WorkspaceError(AgentKError):
    """A workspace cannot be used safely (its path would leave --workspace-root, or another run holds it)."""


class WorkspaceInUse(WorkspaceError):
    """Another live process holds the workspace's lock."""


class ArchiveError(AgentKError):
    """An archive cannot be unpacked; the message names it and says why."""


class UnsafeArchive(ArchiveError):
    """Refused before extraction: it would write outside its folder, holds links, is a bomb or too large."""


class CorruptArchive(ArchiveError):
    """Truncated, damaged or not an archive at all."""


class KaggleError(AgentKError):
    """Anything Kaggle refused or could not do, said in one line (the rest: agentk/kaggle/errors.py)."""


class KaggleCredentialsError(KaggleError):
    """Credentials are missing, incomplete, or rejected by Kaggle (HTTP 401)."""
