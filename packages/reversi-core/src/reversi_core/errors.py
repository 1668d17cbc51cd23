"""The one exception tree of Reversi.

Every error that Reversi raises, and every error that a connector lets escape a tool,
is one of these. Connectors map transport and vendor errors into this tree; no raw
``httpx``, ``psycopg`` or ``OSError`` leaves a tool, and no message carries a credential.

::

    ReversiError
    ├── ConfigurationError          bad command line, environment or connector options
    │   └── ConnectorNotFoundError  no installed connector has that name
    ├── ManifestError               a manifest set that cannot form a registry
    ├── JournalError                the journal cannot be opened, read or written
    │   └── JournalVersionError     the journal was written by a newer schema
    ├── RunStateError               the run cannot take this operation now
    │   ├── RunClosedError          the run was rolled back; it takes no new calls
    │   ├── RollbackInProgressError another rollback of the run is running
    │   └── ReplayRefusedError      an uncertain step cannot be replayed safely
    ├── CallRejected                refused before anything was executed
    │   ├── UnknownToolError        no manifest for the tool
    │   ├── PermissionDenied        the run's scope lacks the tool's permission
    │   ├── InvalidArgumentsError   arguments do not satisfy the input schema
    │   ├── ToolUnavailableError    the tool has a manifest but is withheld (drifted, not offered)
    │   └── ApprovalDenied          approval was required and not given
    ├── ToolError                   the tool ran and failed; the backend did not change
    └── EffectUncertainError        a write may or may not have been applied

``ToolError`` and ``EffectUncertainError`` are deliberately siblings: code that catches
``ToolError`` to retry must never swallow an uncertain outcome by accident.

An error that :meth:`reversi_core.engine.Run.call` journaled as a step (a rejection, a
failure, an uncertain outcome) carries that step's number in ``step``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApprovalDenied",
    "CallRejected",
    "ConfigurationError",
    "ConnectorNotFoundError",
    "EffectUncertainError",
    "InvalidArgumentsError",
    "JournalCorruptError",
    "JournalError",
    "JournalVersionError",
    "ManifestError",
    "PermissionDenied",
    "ReplayRefusedError",
    "ReversiError",
    "RollbackInProgressError",
    "RunClosedError",
    "RunStateError",
    "ToolError",
    "ToolUnavailableError",
    "UnknownRunError",
    "UnknownToolError",
]


class ReversiError(Exception):
    """Base class of every error Reversi raises.

    ``step`` is the number of the journal step the error was recorded as, or ``None``
    when it was not recorded as a step (set by the engine).
    """

    step: int | None = None


class ConfigurationError(ReversiError):
    """The command line, the environment or a connector's options are wrong."""


class ConnectorNotFoundError(ConfigurationError):
    """No connector of that name is installed (entry-point group ``reversi.connectors``)."""


class ManifestError(ReversiError):
    """A set of manifests cannot form a registry; the message names the tool and the problem."""

    def __init__(self, tool: str, problem: str) -> None:
        super().__init__(f"{tool}: {problem}")
        self.tool = tool
        self.problem = problem


class JournalError(ReversiError):
    """The journal cannot be opened, read or written."""


class UnknownRunError(JournalError):
    """The journal holds no run with the id asked for (a :class:`JournalError`, so that
    callers written before it still catch it)."""


class JournalCorruptError(JournalError):
    """A row of the journal holds what no write of the journal stores (a state no step can
    be in, arguments that are not JSON): it was changed behind the journal's back.
    ``run_id`` and ``seq`` (``None`` for the run's own row) name the row; ``reversi
    verify`` reports such a run as tampered."""

    def __init__(self, message: str, run_id: str | None = None, seq: int | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.seq = seq


class JournalVersionError(JournalError):
    """The journal's schema is newer than this build of reversi-core understands, or (for
    a read-only open, which migrates nothing) older than it."""


class RunStateError(ReversiError):
    """The run cannot take this operation in its current state."""


class RunClosedError(RunStateError):
    """The run has been rolled back (or is being rolled back) and takes no new calls."""


class RollbackInProgressError(RunStateError):
    """Another process is rolling back the same run right now."""


class ReplayRefusedError(RunStateError):
    """An uncertain step cannot be replayed safely: its tool's vendor does not honour the key,
    the key may have expired, the step was resolved already, or the run's rollback has
    started. Nothing was sent; the message says why."""


class CallRejected(ReversiError):
    """A call refused before anything executed; the step is journaled ``rejected``."""


class UnknownToolError(CallRejected):
    """No manifest in the registry names this tool."""


class PermissionDenied(CallRejected):
    """The run's scope does not grant the permission the tool needs.

    ``permission`` holds the missing permission string.
    """

    def __init__(self, message: str, *, permission: str) -> None:
        super().__init__(message)
        self.permission = permission


class InvalidArgumentsError(CallRejected):
    """The arguments do not satisfy the tool's input schema.

    ``problems`` lists one ``"<field path>: <problem>"`` string per failing field.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class ToolUnavailableError(CallRejected):
    """The tool has a manifest but its calls are withheld; ``code`` says why.

    ``code`` is ``"drifted"`` (the server's input schema differs from the manifest) or
    ``"not_offered"`` (the server does not offer the tool).
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class ApprovalDenied(CallRejected):
    """The tool needs approval and none was given (no approver, or it said no)."""


class ToolError(ReversiError):
    """The tool ran and failed definitely: the backend did not change.

    ``status`` is the vendor's HTTP status (or ``None``), ``code`` the vendor's own error
    code or a short connector code such as ``"path_refused"``.
    """

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code

    def to_json(self) -> dict[str, Any]:
        """Return ``{"type": "tool_error", "message", "status", "code"}``."""
        return {
            "type": "tool_error",
            "message": str(self),
            "status": self.status,
            "code": self.code,
        }


class EffectUncertainError(ReversiError):
    """A write may or may not have been applied (lost connection, timeout, crash).

    The engine journals such a step ``uncertain`` and a rollback reports it instead of
    guessing; a person resolves it with ``reversi resolve``.
    """

    def to_json(self) -> dict[str, Any]:
        """Return ``{"type": "uncertain", "message"}``."""
        return {"type": "uncertain", "message": str(self)}
