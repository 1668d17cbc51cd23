"""The suite against deliberately broken connectors: every check can fail, and says why.

The checks are called as plain functions (through ``runner.run_check``) on fixtures of
the synthetic ``memo`` connector of memo.py, not through the discovered matrix. The
well-behaved :class:`~certification.tests.memo.MemoConnector` passes all twelve; each
entry of :data:`BROKEN` names a check, a variant with one defect, and words the failure
must contain. ``test_certification.py`` requires an entry for every check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from certification import runner
from certification.tests import memo
from reversi_core.testing import CHECKS, FakeServer, Fault, Faults

BROKEN: dict[str, list[tuple[type[memo.MemoConnector], str]]] = {
    "forward_success": [(memo.BrokenReaderWrites, "is read_only but changed the backend")],
    "forward_failure": [
        (memo.BrokenSwallowsRefusal, "succeeded"),
        (memo.BrokenCodeUnnamed, "does not name its code MEMO-INVALID"),
    ],
    "duplicate_call": [(memo.BrokenRepeatFails, "failed when called twice")],
    "retry": [
        (memo.BrokenLosesUncertainty, "uncertainty lost"),
        (memo.BrokenCodeUnnamed, "does not name its code MEMO-BUSY"),
    ],
    "compensation_success": [
        (memo.BrokenUndoDoesNothing, "the undo changed nothing"),
        (memo.BrokenCompensationArgs, "do not form a registry"),
    ],
    "compensation_failure": [(memo.BrokenUndoIgnoresErrors, "yet the step is compensated")],
    "verification_failure": [(memo.BrokenUndoDoesNothing, "does not restore the prior state")],
    "permission_denial": [
        (memo.BrokenHidesStatus, "ToolError.status is None, expected 401"),
        (memo.BrokenCodeForDenial, "'MEMO-AUTH' is not one of MEMO-DENIED"),
        (memo.BrokenCodeUnnamed, "does not name its code MEMO-AUTH"),
    ],
    "timeout": [(memo.BrokenNoTimeout, "has no timeout of its own")],
    "redaction": [(memo.BrokenLeaksToken, "carries the credential")],
    "dependency_block": [(memo.BrokenMissingEdge, "recorded no edge")],
    "manifest_drift": [(memo.BrokenSchemaDrifts, "disagree for memo.get_note")],
}
"""``{check: [(broken connector, words its failure must contain)]}``."""

CASES = [
    pytest.param(check, cls, words, id=f"{check}-{cls.__name__}")
    for check, variants in BROKEN.items()
    for cls, words in variants
]


def subject(cls: type[memo.MemoConnector], tmp_path: Path, **kwargs: float) -> runner.Subject:
    return runner.Subject("memo", cls, memo.memo_fixture(cls, **kwargs), tmp_path)


@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECKS)
async def test_the_good_connector_passes(check: str, tmp_path: Path) -> None:
    outcome = await runner.run_check(check, subject(memo.MemoConnector, tmp_path))
    assert outcome.status == "pass", outcome.detail


@pytest.mark.anyio
@pytest.mark.parametrize(("check", "cls", "words"), CASES)
async def test_a_broken_connector_fails(
    check: str, cls: type[memo.MemoConnector], words: str, tmp_path: Path
) -> None:
    outcome = await runner.run_check(check, subject(cls, tmp_path))
    assert outcome.status == "fail", f"{cls.__name__} passed {check}: {outcome.detail}"
    assert words in outcome.detail, outcome.detail


CODED_CHECKS = ("forward_failure", "retry", "permission_denial", "redaction")
"""The checks in which a refusal's status or code is looked at (the others see no difference)."""


@pytest.mark.anyio
@pytest.mark.parametrize("check", CODED_CHECKS)
async def test_a_connector_answering_in_vendor_codes_passes_with_its_mapping(
    check: str, tmp_path: Path
) -> None:
    outcome = await runner.run_check(check, subject(memo.MemoVendorCodes, tmp_path))
    assert outcome.status == "pass", outcome.detail
    if check == "permission_denial":
        assert "HTTP 401 (MEMO-AUTH), HTTP 403 (MEMO-DENIED)" in outcome.detail


@pytest.mark.anyio
async def test_the_report_names_the_codes_answered_not_every_code_declared(
    tmp_path: Path,
) -> None:
    import dataclasses

    coded = subject(memo.MemoVendorCodes, tmp_path)
    wider = {status: {code, f"{code}-NEVER-SENT"} for status, code in memo.VENDOR_CODES.items()}
    fixture = dataclasses.replace(coded.fixture, error_codes=wider)
    outcome = await runner.run_check(
        "permission_denial", dataclasses.replace(coded, fixture=fixture)
    )
    assert outcome.status == "pass", outcome.detail
    assert outcome.detail.endswith("× HTTP 401 (MEMO-AUTH), HTTP 403 (MEMO-DENIED)")
    assert "NEVER-SENT" not in outcome.detail


class DescribedFaults(Faults):
    """The fake's faults, with words for what each injected status stands for."""

    WORDS: ClassVar[dict[int, str]] = {
        401: "a revoked token",
        403: "a scope taken away",
        503: "a full queue",
    }

    def describe(self, fault: Fault) -> str | None:
        return self.WORDS.get(fault.http_status) if fault.http_status else None


@contextmanager
def described_backend(directory: Path) -> Iterator[FakeServer]:
    with memo.memo_backend(directory) as server:
        server.faults = DescribedFaults()
        yield server


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("check", "words"),
    [
        ("permission_denial", "× a revoked token (MEMO-AUTH), a scope taken away (MEMO-DENIED)"),
        ("retry", ": dropped connection, a full queue (MEMO-BUSY), retry"),
    ],
)
async def test_the_report_uses_the_handles_words_for_a_fault(
    check: str, words: str, tmp_path: Path
) -> None:
    import dataclasses

    coded = subject(memo.MemoVendorCodes, tmp_path)
    fixture = dataclasses.replace(coded.fixture, backend=described_backend)
    outcome = await runner.run_check(check, dataclasses.replace(coded, fixture=fixture))
    assert outcome.status == "pass", outcome.detail
    assert outcome.detail.endswith(words), outcome.detail
    assert "HTTP" not in outcome.detail


@pytest.mark.anyio
async def test_a_failure_under_a_described_fault_says_which_status_it_stands_for(
    tmp_path: Path,
) -> None:
    import dataclasses

    broken = subject(memo.BrokenCodeForDenial, tmp_path)
    fixture = dataclasses.replace(broken.fixture, backend=described_backend)
    outcome = await runner.run_check(
        "permission_denial", dataclasses.replace(broken, fixture=fixture)
    )
    assert outcome.status == "fail"
    assert "under a scope taken away (for HTTP 403)" in outcome.detail, outcome.detail
    assert "'MEMO-AUTH' is not one of MEMO-DENIED" in outcome.detail


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("check", "status"), [("forward_failure", 422), ("retry", 503), ("permission_denial", 401)]
)
async def test_vendor_codes_pass_only_because_the_fixture_declares_them(
    check: str, status: int, tmp_path: Path
) -> None:
    import dataclasses

    coded = subject(memo.MemoVendorCodes, tmp_path)
    undeclared = dataclasses.replace(coded.fixture, error_codes={})
    outcome = await runner.run_check(check, dataclasses.replace(coded, fixture=undeclared))
    assert outcome.status == "fail"
    assert f"ToolError.status is None, expected {status}" in outcome.detail


@pytest.mark.parametrize(
    ("codes", "words"),
    [
        ({403: "42501"}, "a collection of codes, not the string"),
        ({403: set()}, "at least one non-empty code"),
        ({403: {""}}, "at least one non-empty code"),
        ({42: {"x"}}, "is not an HTTP status"),
        ({True: {"x"}}, "is not an HTTP status"),
    ],
)
def test_malformed_error_codes_are_refused(codes: dict[Any, Any], words: str) -> None:
    import dataclasses

    good = memo.memo_fixture()
    with pytest.raises(ValueError, match=words):
        dataclasses.replace(good, error_codes=codes)


def test_error_codes_are_kept_as_sets_by_status() -> None:
    fixture = memo.memo_fixture(memo.MemoVendorCodes)
    assert fixture.codes_for(403) == frozenset({"MEMO-DENIED"})
    assert fixture.codes_for(500) == frozenset()
    assert memo.memo_fixture().codes_for(403) == frozenset()


@pytest.mark.anyio
async def test_a_connector_without_a_timeout_fails_within_a_bounded_time(tmp_path: Path) -> None:
    started = time.monotonic()
    outcome = await runner.run_check(
        "timeout", subject(memo.BrokenNoTimeout, tmp_path, call_timeout=0.2)
    )
    elapsed = time.monotonic() - started
    assert outcome.status == "fail"
    assert "still waiting for a silent backend" in outcome.detail
    assert elapsed < 5.0, f"the timeout check took {elapsed:.1f} s"


@pytest.mark.anyio
@pytest.mark.parametrize("check", runner.FAULT_CHECKS)
async def test_a_fault_check_cannot_be_waived_when_the_backend_injects_faults(
    check: str, tmp_path: Path
) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    waived = dataclasses.replace(
        good.fixture, not_applicable={check: "we would rather not run this check today"}
    )
    outcome = await runner.run_check(check, dataclasses.replace(good, fixture=waived))
    assert outcome.status == "fail"
    assert "injects faults" in outcome.detail


def test_a_one_word_reason_is_refused() -> None:
    from reversi_core.testing import NotApplicable

    with pytest.raises(ValueError, match="in a sentence"):
        NotApplicable("x")
    assert NotApplicable("the demo connector holds no credential at all").reason
