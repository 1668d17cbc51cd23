"""The thirteen certification checks: their ids, titles, what each verifies and where."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CHECKS", "CHECK_INFO", "SUITE_CHECKS_FILE", "SUITE_TEST", "CheckInfo"]

CHECKS: tuple[str, ...] = (
    "forward_success",
    "forward_failure",
    "duplicate_call",
    "retry",
    "compensation_success",
    "compensation_failure",
    "verification_failure",
    "permission_denial",
    "timeout",
    "redaction",
    "dependency_block",
    "manifest_drift",
    "concurrent_change",
)
"""The thirteen certification checks, in the order the results table shows them."""

SUITE_CHECKS_FILE = "certification/checks.py"
"""Where the checks are written (one ``async def check_<id>`` each), relative to the repository."""

SUITE_TEST = "certification/test_certification.py::test_check"
"""The pytest test that runs every check for every connector, parametrized ``[<connector>-<check>]``."""


@dataclass(frozen=True)
class CheckInfo:
    """One check: its id, its column title and, in a sentence, what it verifies."""

    id: str
    title: str
    verifies: str

    @property
    def function(self) -> str:
        """The check's function in :data:`SUITE_CHECKS_FILE`: ``check_<id>``."""
        return f"check_{self.id}"

    def enforced_in(self, connector: str = "<connector>") -> tuple[str, str]:
        """``(file::function, test id)`` where the suite enforces this check for ``connector``."""
        return (
            f"{SUITE_CHECKS_FILE}::{self.function}",
            f"{SUITE_TEST}[{connector}-{self.id}]",
        )


CHECK_INFO: Mapping[str, CheckInfo] = {
    info.id: info
    for info in (
        CheckInfo(
            "forward_success",
            "Forward success",
            "each tool succeeds on its examples with a JSON object that its output schema "
            "describes; a read-only tool leaves the backend as it was and sends no write request",
        ),
        CheckInfo(
            "forward_failure",
            "Forward failure",
            "a call the backend turns down raises ToolError with the error code (and status) "
            "its fixture declares, naming the HTTP status or the vendor's code, without the "
            "credential, and the backend and what surrounds it stay as they were",
        ),
        CheckInfo(
            "duplicate_call",
            "Duplicate call",
            "repeating a call of an idempotent tool (or of a tool that sends the idempotency key) "
            "with the same key succeeds and changes nothing more",
        ),
        CheckInfo(
            "retry",
            "Retry",
            "a connection dropped after a write was sent raises EffectUncertainError, on a read a "
            "ToolError; a 503 (or the vendor's code for it) raises ToolError naming it; once the "
            "fault is gone the same call succeeds",
        ),
        CheckInfo(
            "compensation_success",
            "Compensation success",
            "the manifests form a registry (each compensation a registered idempotent tool taking "
            "exactly the mapped arguments), and a real engine's rollback returns the backend to "
            "its prior state, or to the declared residue",
        ),
        CheckInfo(
            "compensation_failure",
            "Compensation failure",
            "an undo that fails leaves the step compensation_failed and the rollback incomplete; "
            "after the fault is gone, rolling back again completes it, with the same idempotency "
            "key as the failed attempt (and, for a vendor that takes keys, that key received by "
            "the backend in both)",
        ),
        CheckInfo(
            "verification_failure",
            "Verification failure",
            "a verify callback answering false leaves the step verification_failed, not "
            "compensated; a later rollback with a truthful verify completes",
        ),
        CheckInfo(
            "permission_denial",
            "Permission denial",
            "a 401 and a 403 (or the vendor's codes for them) each raise ToolError naming it, "
            "without the credential, and change nothing",
        ),
        CheckInfo(
            "timeout",
            "Timeout",
            "against a backend that never answers, every tool gives up by itself, within its "
            "default limit and, built with long defaults, within the shorter limit the call "
            "gives it (CallContext.timeout): a write ends uncertain (EffectUncertainError), a "
            "read in a plain ToolError",
        ),
        CheckInfo(
            "redaction",
            "Redaction",
            "the credential appears in no error, no result, no journal entry, and no URL or body "
            "of a request the backend received",
        ),
        CheckInfo(
            "dependency_block",
            "Dependency block",
            "for every tool declaring requires, the engine records the edge, and a rollback "
            "defers the earlier step while the later one still stands (for good, when the "
            "later tool is irreversible)",
        ),
        CheckInfo(
            "manifest_drift",
            "Manifest drift",
            "the stored schema hashes match the manifests, and a changed, added or removed input "
            "schema is reported as such (key order alone is not a change)",
        ),
        CheckInfo(
            "concurrent_change",
            "Concurrent change",
            "for every tool whose compensation restores a prior state, a change made through "
            "the backend after the call is not overwritten: the rollback leaves it in place and "
            "reports the step compensation_failed with a reason naming what changed; once the "
            "change is undone by hand, rolling back again completes (a tool the fixture declares "
            "in restores_nothing is n/a with its reason)",
        ),
    )
}
"""Every check by id, in :data:`CHECKS` order."""
