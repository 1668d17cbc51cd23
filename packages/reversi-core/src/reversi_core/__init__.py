"""Reversi core: journal every tool call of an agent's run and roll the run back.

The public surface is listed in ``__all__``; submodules hold the details:
:mod:`reversi_core.errors` (the exception tree), :mod:`reversi_core.manifest`,
:mod:`reversi_core.registry`, :mod:`reversi_core.engine`, :mod:`reversi_core.journal`,
:mod:`reversi_core.connector`, :mod:`reversi_core.compensator`, :mod:`reversi_core.redact`.

Names are imported on first use (PEP 562): ``import reversi_core`` alone, as every
console script's start does, loads none of the submodules, so that ``reversi-gateway``
can start its upstream server before the MCP SDK and pydantic are imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__about__ import __version__

if TYPE_CHECKING:
    from .compensator import CommandCompensator, CommandReplayer
    from .connector import (
        CallContext,
        CliOption,
        CompensationCall,
        Compensator,
        Connector,
        all_connectors,
        compensator_for,
        connector_schema_hashes,
        enabled_from_env,
        executor_for,
        registry_for,
        replayer_for,
        tool,
    )
    from .engine import (
        REJECTED_ARGS_LIMIT,
        ApprovalDecision,
        ApprovalRequest,
        CallOutcome,
        PlannedStep,
        ReplayOutcome,
        RollbackPlan,
        RollbackReport,
        Run,
        Withheld,
        compensation_key,
    )
    from .errors import (
        ApprovalDenied,
        CallRejected,
        ConfigurationError,
        ConnectorNotFoundError,
        EffectUncertainError,
        InvalidArgumentsError,
        JournalCorruptError,
        JournalError,
        JournalVersionError,
        ManifestError,
        PermissionDenied,
        ReplayRefusedError,
        ReversiError,
        RollbackInProgressError,
        RunClosedError,
        RunStateError,
        ToolError,
        ToolUnavailableError,
        UnknownRunError,
        UnknownToolError,
    )
    from .journal import (
        Durability,
        Journal,
        RollbackState,
        RunStatus,
        SQLiteJournal,
        StepRecord,
        StepState,
        open_journal,
    )
    from .manifest import (
        Approval,
        Compensation,
        Const,
        Effect,
        Manifest,
        Match,
        Replay,
        Requirement,
    )
    from .redact import register_secret, scrub
    from .registry import (
        ManifestDrift,
        Registry,
        detect_manifest_drift,
        schema_hash,
    )

_LAZY: dict[str, str] = {
    "CommandCompensator": ".compensator",
    "CommandReplayer": ".compensator",
    "CallContext": ".connector",
    "CliOption": ".connector",
    "CompensationCall": ".connector",
    "Compensator": ".connector",
    "Connector": ".connector",
    "all_connectors": ".connector",
    "compensator_for": ".connector",
    "connector_schema_hashes": ".connector",
    "enabled_from_env": ".connector",
    "executor_for": ".connector",
    "registry_for": ".connector",
    "replayer_for": ".connector",
    "tool": ".connector",
    "REJECTED_ARGS_LIMIT": ".engine",
    "ApprovalDecision": ".engine",
    "ApprovalRequest": ".engine",
    "CallOutcome": ".engine",
    "PlannedStep": ".engine",
    "ReplayOutcome": ".engine",
    "RollbackPlan": ".engine",
    "RollbackReport": ".engine",
    "Run": ".engine",
    "Withheld": ".engine",
    "compensation_key": ".engine",
    "ApprovalDenied": ".errors",
    "CallRejected": ".errors",
    "ConfigurationError": ".errors",
    "ConnectorNotFoundError": ".errors",
    "EffectUncertainError": ".errors",
    "InvalidArgumentsError": ".errors",
    "JournalCorruptError": ".errors",
    "JournalError": ".errors",
    "JournalVersionError": ".errors",
    "UnknownRunError": ".errors",
    "ManifestError": ".errors",
    "PermissionDenied": ".errors",
    "ReversiError": ".errors",
    "ReplayRefusedError": ".errors",
    "RollbackInProgressError": ".errors",
    "RunClosedError": ".errors",
    "RunStateError": ".errors",
    "ToolError": ".errors",
    "ToolUnavailableError": ".errors",
    "UnknownToolError": ".errors",
    "Durability": ".journal",
    "Journal": ".journal",
    "RollbackState": ".journal",
    "RunStatus": ".journal",
    "SQLiteJournal": ".journal",
    "StepRecord": ".journal",
    "StepState": ".journal",
    "open_journal": ".journal",
    "Approval": ".manifest",
    "Compensation": ".manifest",
    "Const": ".manifest",
    "Effect": ".manifest",
    "Manifest": ".manifest",
    "Match": ".manifest",
    "Replay": ".manifest",
    "Requirement": ".manifest",
    "register_secret": ".redact",
    "scrub": ".redact",
    "ManifestDrift": ".registry",
    "Registry": ".registry",
    "detect_manifest_drift": ".registry",
    "schema_hash": ".registry",
}
"""Where each public name lives: ``{name: submodule}``."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "REJECTED_ARGS_LIMIT",
    "Approval",
    "ApprovalDecision",
    "ApprovalDenied",
    "ApprovalRequest",
    "CallContext",
    "CallOutcome",
    "CallRejected",
    "CliOption",
    "CommandCompensator",
    "CommandReplayer",
    "Compensation",
    "CompensationCall",
    "Compensator",
    "ConfigurationError",
    "Connector",
    "ConnectorNotFoundError",
    "Const",
    "Durability",
    "Effect",
    "EffectUncertainError",
    "InvalidArgumentsError",
    "Journal",
    "JournalCorruptError",
    "JournalError",
    "JournalVersionError",
    "Manifest",
    "ManifestDrift",
    "ManifestError",
    "Match",
    "PermissionDenied",
    "PlannedStep",
    "Registry",
    "Replay",
    "ReplayOutcome",
    "ReplayRefusedError",
    "Requirement",
    "ReversiError",
    "RollbackInProgressError",
    "RollbackPlan",
    "RollbackReport",
    "RollbackState",
    "Run",
    "RunClosedError",
    "RunStateError",
    "RunStatus",
    "SQLiteJournal",
    "StepRecord",
    "StepState",
    "ToolError",
    "ToolUnavailableError",
    "UnknownRunError",
    "UnknownToolError",
    "Withheld",
    "__version__",
    "all_connectors",
    "compensation_key",
    "compensator_for",
    "connector_schema_hashes",
    "detect_manifest_drift",
    "enabled_from_env",
    "executor_for",
    "open_journal",
    "register_secret",
    "registry_for",
    "replayer_for",
    "schema_hash",
    "scrub",
    "tool",
]
