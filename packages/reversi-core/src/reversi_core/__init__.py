"""Reversi core: journal every tool call of an agent's run and roll the run back.

The public surface is listed in ``__all__``; submodules hold the details:
:mod:`reversi_core.errors` (the exception tree), :mod:`reversi_core.manifest`,
:mod:`reversi_core.registry`, :mod:`reversi_core.engine`, :mod:`reversi_core.journal`,
:mod:`reversi_core.connector`, :mod:`reversi_core.compensator`, :mod:`reversi_core.redact`.
"""

from .__about__ import __version__
from .compensator import CommandCompensator
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
    tool,
)
from .engine import ApprovalDecision, ApprovalRequest, RollbackReport, Run, compensation_key
from .errors import (
    ApprovalDenied,
    CallRejected,
    ConfigurationError,
    ConnectorNotFoundError,
    EffectUncertainError,
    InvalidArgumentsError,
    JournalError,
    JournalVersionError,
    ManifestError,
    PermissionDenied,
    ReversiError,
    RollbackInProgressError,
    RunClosedError,
    RunStateError,
    ToolError,
    UnknownToolError,
)
from .journal import Durability, RollbackState, RunStatus, SQLiteJournal, StepRecord, StepState
from .manifest import Approval, Compensation, Const, Effect, Manifest, Match, Requirement
from .redact import register_secret, scrub
from .registry import ManifestDrift, Registry, detect_manifest_drift, schema_hash

__all__ = [
    "Approval",
    "ApprovalDecision",
    "ApprovalDenied",
    "ApprovalRequest",
    "CallContext",
    "CallRejected",
    "CliOption",
    "CommandCompensator",
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
    "JournalError",
    "JournalVersionError",
    "Manifest",
    "ManifestDrift",
    "ManifestError",
    "Match",
    "PermissionDenied",
    "Registry",
    "Requirement",
    "ReversiError",
    "RollbackInProgressError",
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
    "UnknownToolError",
    "__version__",
    "all_connectors",
    "compensation_key",
    "compensator_for",
    "connector_schema_hashes",
    "detect_manifest_drift",
    "enabled_from_env",
    "executor_for",
    "register_secret",
    "registry_for",
    "schema_hash",
    "scrub",
    "tool",
]
