"""The suite against deliberately broken connectors: every check can fail, and says why.

The checks are called as plain functions (through ``runner.run_check``) on fixtures of
the synthetic ``memo`` connector of memo.py (and of the fs-like ``shelf`` of shelf.py),
not through the discovered matrix. The well-behaved
:class:`~certification.tests.memo.MemoConnector` passes all thirteen, and
:class:`~certification.tests.shelf.ShelfConnector` every one that applies to it; each
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
from certification.tests import memo, shelf
from reversi_core import Connector
from reversi_core.testing import (
    CHECKS,
    ConcurrentChange,
    Failure,
    FakeServer,
    Fault,
    Faults,
    IdempotencyKeyIn,
)

BROKEN: dict[str, list[tuple[type[Connector], str]]] = {
    "forward_success": [
        (memo.BrokenReaderWrites, "is read_only but changed the backend"),
        (
            memo.BrokenResultSchemaLies,
            "returned a result its output schema does not describe: $.views: 0 is not of type",
        ),
    ],
    "forward_failure": [
        (memo.BrokenSwallowsRefusal, "succeeded"),
        (memo.BrokenCodeUnnamed, "does not name its code MEMO-INVALID"),
        (
            memo.BrokenOneCodePerStatus,
            "refused for another reason than the fixture declares: HTTP 422, code 'invalid', "
            "expected HTTP 422, code 'exists'",
        ),
        (shelf.BrokenShelfEscapes, "although refused, changed what lies outside the backend"),
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
    "compensation_failure": [
        (memo.BrokenUndoIgnoresErrors, "yet the step is compensated"),
        (memo.BrokenFreshUndoKey, "not the compensation's idempotency key"),
    ],
    "verification_failure": [(memo.BrokenUndoDoesNothing, "does not restore the prior state")],
    "permission_denial": [
        (memo.BrokenHidesStatus, "ToolError.status is None, expected 401"),
        (memo.BrokenCodeForDenial, "'MEMO-AUTH' is not one of MEMO-DENIED"),
        (memo.BrokenCodeUnnamed, "does not name its code MEMO-AUTH"),
    ],
    "timeout": [
        (memo.BrokenNoTimeout, "has no timeout of its own"),
        (
            memo.BrokenWriteIgnoresCallLimit,
            "memo.create_note was still waiting for a silent backend after 1.3 s (the call's "
            "own limit was 0.15 s, its defaults 300 s): the connector does not honour",
        ),
    ],
    "redaction": [(memo.BrokenLeaksToken, "carries the credential")],
    "dependency_block": [
        (memo.BrokenMissingEdge, "recorded no edge"),
        (memo.BrokenEdgeOnNoField, "'result.note_id' is not in the output schema"),
    ],
    "manifest_drift": [(memo.BrokenSchemaDrifts, "disagree for memo.get_note")],
    "concurrent_change": [
        (memo.BrokenRestoreOverwrites, "overwrote that change (memo.restore_note must refuse"),
        (memo.BrokenRefusalUnnamed, 'does not name what changed ("the note\'s text")'),
    ],
}
"""``{check: [(broken connector, words its failure must contain)]}``."""

CASES = [
    pytest.param(check, cls, words, id=f"{check}-{cls.__name__}")
    for check, variants in BROKEN.items()
    for cls, words in variants
]


def subject(cls: type[Connector], tmp_path: Path, **kwargs: float) -> runner.Subject:
    """The subject of a memo connector (``kwargs`` go to its fixture), or of a shelf one."""
    if issubclass(cls, shelf.ShelfConnector):
        return runner.Subject("shelf", cls, shelf.shelf_fixture(cls), tmp_path)
    assert issubclass(cls, memo.MemoConnector)
    return runner.Subject("memo", cls, memo.memo_fixture(cls, **kwargs), tmp_path)


@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECKS)
async def test_the_good_connector_passes(check: str, tmp_path: Path) -> None:
    outcome = await runner.run_check(check, subject(memo.MemoConnector, tmp_path))
    assert outcome.status == "pass", outcome.detail


@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECKS)
async def test_the_good_shelf_passes_every_check_that_applies(check: str, tmp_path: Path) -> None:
    good = subject(shelf.ShelfConnector, tmp_path)
    outcome = await runner.run_check(check, good)
    declared = good.fixture.reason(check)
    if declared is not None or check == "dependency_block":
        assert outcome.status == "not_applicable", outcome.detail
    else:
        assert outcome.status == "pass", outcome.detail


@pytest.mark.anyio
@pytest.mark.parametrize(("check", "cls", "words"), CASES)
async def test_a_broken_connector_fails(
    check: str, cls: type[Connector], words: str, tmp_path: Path
) -> None:
    outcome = await runner.run_check(check, subject(cls, tmp_path))
    assert outcome.status == "fail", f"{cls.__name__} passed {check}: {outcome.detail}"
    assert words in outcome.detail, outcome.detail


@pytest.mark.anyio
@pytest.mark.parametrize("check", ["forward_success", "retry", "timeout"])
async def test_reads_by_post_on_a_route_that_does_not_write_pass(check: str, tmp_path: Path) -> None:
    """A POST the backend's route declares read-only is a read (GraphQL queries)."""
    outcome = await runner.run_check(check, subject(memo.MemoReadsByPost, tmp_path))
    assert outcome.status == "pass", outcome.detail


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


# -- the stricter declarations: keys, call limits, expected codes, what lies outside ----


@pytest.mark.anyio
async def test_a_retried_undo_under_a_fresh_key_fails_even_when_the_connector_is_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine that gave each attempt of an undo its own key is caught from the keys the
    compensator receives, before the backend's copy is looked at."""
    import itertools

    from reversi_core import _rollback

    attempt = itertools.count(1)
    monkeypatch.setattr(
        _rollback,
        "compensation_key",
        lambda run_id, seq: f"reversi-{run_id}-{seq}-{next(attempt)}",
    )
    outcome = await runner.run_check("compensation_failure", subject(memo.MemoConnector, tmp_path))
    assert outcome.status == "fail"
    assert "the retried attempt of memo.delete_note undoing memo.create_note" in outcome.detail
    assert "must carry the same key, derived only from the run and the step" in outcome.detail


@pytest.mark.anyio
async def test_the_backends_copy_of_the_key_is_read_where_the_fixture_says(tmp_path: Path) -> None:
    """Declared in a body field the memo service never sees, the key is missing from every
    request: the check reads the place declared, not a header it guesses."""
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    elsewhere = dataclasses.replace(
        good.fixture, idempotency_key_in=IdempotencyKeyIn(field="idempotency_key")
    )
    outcome = await runner.run_check(
        "compensation_failure", dataclasses.replace(good, fixture=elsewhere)
    )
    assert outcome.status == "fail"
    assert "the backend received body field idempotency_key None in DELETE" in outcome.detail


def test_the_key_is_read_from_a_header_or_a_body_field() -> None:
    from reversi_core.testing import FakeRequest

    request = FakeRequest(
        "POST",
        "/refunds",
        "/refunds",
        {"idempotency-key": "k-1"},
        body=b'{"idempotency_key": "k-2"}',
        json={"idempotency_key": "k-2"},
    )
    assert IdempotencyKeyIn(header="Idempotency-Key").read(request) == "k-1"
    assert IdempotencyKeyIn(field="idempotency_key").read(request) == "k-2"
    form = FakeRequest("POST", "/v1/refunds", "/v1/refunds", {}, body=b"idempotency_key=k-3")
    assert IdempotencyKeyIn(field="idempotency_key").read(form) == "k-3"
    assert IdempotencyKeyIn(header="X-Key").read(request) is None
    for bad in ({}, {"header": "A", "field": "b"}, {"header": " "}):
        with pytest.raises(ValueError, match="exactly one"):
            IdempotencyKeyIn(**bad)


def test_tools_that_send_keys_need_the_place_of_the_key() -> None:
    import dataclasses

    good = memo.memo_fixture()
    with pytest.raises(ValueError, match="idempotency_key_in must say where"):
        dataclasses.replace(good, idempotency_key_in=None)
    with pytest.raises(ValueError, match="sends_idempotency_key names no tool"):
        dataclasses.replace(good, sends_idempotency_key=frozenset())


@pytest.mark.anyio
async def test_a_builder_that_ignores_its_default_limits_fails_the_timeout_check(
    tmp_path: Path,
) -> None:
    """build_with_timeout keeping the short limits would let a connector deaf to the call's
    limit pass: the check sees the defaults it asked for run out too soon."""
    import dataclasses

    deaf = subject(memo.BrokenWriteIgnoresCallLimit, tmp_path)
    honest = deaf.fixture.build_with_timeout
    assert honest is not None
    lying = dataclasses.replace(
        deaf.fixture, build_with_timeout=lambda server, seconds: honest(server, memo.LIMIT)
    )
    outcome = await runner.run_check("timeout", dataclasses.replace(deaf, fixture=lying))
    assert outcome.status == "fail"
    assert "before those defaults ran out: the fixture does not give the connector" in (
        outcome.detail
    )


@pytest.mark.anyio
async def test_the_timeout_check_needs_a_builder_with_default_limits(tmp_path: Path) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    without = dataclasses.replace(good.fixture, build_with_timeout=None)
    outcome = await runner.run_check("timeout", dataclasses.replace(good, fixture=without))
    assert outcome.status == "fail"
    assert "the fixture has no build_with_timeout(handle, seconds)" in outcome.detail


@pytest.mark.anyio
async def test_a_failing_example_refused_with_another_status_fails(tmp_path: Path) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    wrong = dataclasses.replace(
        good.fixture,
        failures={"memo.get_note": [Failure({"id": "missing"}, code="not_found", status=410)]},
    )
    outcome = await runner.run_check("forward_failure", dataclasses.replace(good, fixture=wrong))
    assert outcome.status == "fail"
    assert "HTTP 404, code 'not_found', expected HTTP 410, code 'not_found'" in outcome.detail


@pytest.mark.parametrize(
    ("failures", "words"),
    [
        (
            {"memo.get_note": [{"id": "missing"}]},
            r"is a dict; wrap it in Failure\(args, code=...\)",
        ),
        ({"memo.get_note": Failure({"id": "x"}, code="not_found")}, "a list of Failure"),
    ],
)
def test_a_failing_example_must_declare_its_code(failures: Any, words: str) -> None:
    import dataclasses

    with pytest.raises(ValueError, match=words):
        dataclasses.replace(memo.memo_fixture(), failures=failures)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"code": ""}, "needs the error code"),
        ({"code": "not_found", "status": 200}, "not an HTTP error status"),
        ({"code": "not_found", "status": True}, "not an HTTP error status"),
    ],
)
def test_a_malformed_failure_is_refused(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Failure({"id": "x"}, **kwargs)


@pytest.mark.anyio
async def test_every_scenario_ends_with_what_surrounds_the_backend_unchanged(
    tmp_path: Path,
) -> None:
    """Whatever the check, a change beside the root is caught when its scenario ends."""
    good = subject(shelf.ShelfConnector, tmp_path)
    with pytest.raises(runner.CheckFailed, match="something outside the backend changed") as caught:
        async with runner.scenario(good, "touches-beside") as scene:
            (scene.handle.beside / "sentinel.txt").write_text("changed\n", encoding="utf-8")
    assert "beside/sentinel.txt" in str(caught.value)
    async with runner.scenario(good, "touches-the-root") as scene:
        (scene.handle.root / "inside.txt").write_text("fine\n", encoding="utf-8")
        assert scene.left_outside() is None


# -- the concurrent-change check: its declarations ----------------------------------------


@pytest.mark.anyio
async def test_the_concurrent_change_check_covers_every_restoring_tool_and_names_the_others(
    tmp_path: Path,
) -> None:
    outcome = await runner.run_check("concurrent_change", subject(memo.MemoConnector, tmp_path))
    assert outcome.status == "pass", outcome.detail
    assert outcome.detail.startswith("memo.create_note, memo.edit_note: each rollback kept")
    assert f"n/a for memo.tag_note: {memo.RESTORES_NOTHING['memo.tag_note']}" in outcome.detail


@pytest.mark.anyio
async def test_without_a_concurrent_change_the_check_fails_naming_the_tool(
    tmp_path: Path,
) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    fixture = dataclasses.replace(good.fixture, concurrent_change=None)
    outcome = await runner.run_check("concurrent_change", dataclasses.replace(good, fixture=fixture))
    assert outcome.status == "fail"
    assert "the compensation of memo.create_note restores a prior state" in outcome.detail
    assert "declare the tool in restores_nothing" in outcome.detail


@pytest.mark.anyio
async def test_a_concurrent_change_for_no_tool_fails_unless_the_tool_restores_nothing(
    tmp_path: Path,
) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)

    def only_creations(server: Any, tool: str, args: Any, result: Any) -> Any:
        return memo.person_edits(server, tool, args, result) if tool == "memo.create_note" else None

    fixture = dataclasses.replace(good.fixture, concurrent_change=only_creations)
    outcome = await runner.run_check("concurrent_change", dataclasses.replace(good, fixture=fixture))
    assert outcome.status == "fail"
    assert "makes no change for memo.edit_note" in outcome.detail


@pytest.mark.anyio
async def test_a_change_the_fingerprint_cannot_see_proves_nothing(tmp_path: Path) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)

    def invisible(server: Any, tool: str, args: Any, result: Any) -> ConcurrentChange:
        return ConcurrentChange(what="nothing at all", revert=lambda: None)

    fixture = dataclasses.replace(good.fixture, concurrent_change=invisible)
    outcome = await runner.run_check("concurrent_change", dataclasses.replace(good, fixture=fixture))
    assert outcome.status == "fail"
    assert "changed nothing the fingerprint shows" in outcome.detail


@pytest.mark.anyio
async def test_restores_nothing_must_name_an_undoable_tool(tmp_path: Path) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    fixture = dataclasses.replace(
        good.fixture,
        restores_nothing={
            **memo.RESTORES_NOTHING,
            "memo.get_note": "a read changes nothing, so it restores nothing either",
        },
    )
    outcome = await runner.run_check("concurrent_change", dataclasses.replace(good, fixture=fixture))
    assert outcome.status == "fail"
    assert "restores_nothing names memo.get_note" in outcome.detail


@pytest.mark.anyio
async def test_the_check_is_not_applicable_when_no_compensation_restores_anything(
    tmp_path: Path,
) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    why = "a note this run made held nothing of anyone's before the call"
    fixture = dataclasses.replace(
        good.fixture,
        concurrent_change=None,
        restores_nothing={
            **memo.RESTORES_NOTHING,
            "memo.create_note": why,
            "memo.edit_note": why,
        },
    )
    outcome = await runner.run_check("concurrent_change", dataclasses.replace(good, fixture=fixture))
    assert outcome.status == "not_applicable"
    assert outcome.detail.startswith("no compensation restores a prior state (memo.create_note: ")
    assert f"memo.tag_note: {memo.RESTORES_NOTHING['memo.tag_note']}" in outcome.detail


@pytest.mark.anyio
async def test_the_concurrent_change_check_cannot_be_waived_while_a_compensation_restores(
    tmp_path: Path,
) -> None:
    import dataclasses

    good = subject(memo.MemoConnector, tmp_path)
    waived = dataclasses.replace(
        good.fixture,
        not_applicable={"concurrent_change": "people never touch the notes the agent writes"},
    )
    outcome = await runner.run_check(
        "concurrent_change", dataclasses.replace(good, fixture=waived)
    )
    assert outcome.status == "fail"
    assert "memo.create_note, memo.edit_note restore a prior state" in outcome.detail


@pytest.mark.parametrize(
    ("declared", "words"),
    [
        ({"tag_note": "a reason long enough to count as a sentence"}, "is not a tool name"),
        ({"memo.tag_note": "too short"}, "must say in a sentence"),
    ],
)
def test_a_malformed_restores_nothing_is_refused(declared: dict[str, str], words: str) -> None:
    import dataclasses

    with pytest.raises(ValueError, match=words):
        dataclasses.replace(memo.memo_fixture(), restores_nothing=declared)


def test_a_concurrent_change_names_what_changed_and_can_be_reverted() -> None:
    with pytest.raises(ValueError, match="what changed"):
        ConcurrentChange(what=" ", revert=lambda: None)
    with pytest.raises(ValueError, match="revert"):
        ConcurrentChange(what="the text", revert=None)  # type: ignore[arg-type]


def _step(seq: int, state: Any) -> Any:
    from reversi_core.journal import StepRecord, StepState

    return StepRecord(
        run_id="run_1", seq=seq, tool=f"memo.t{seq}", effect="reversible", permission="memo:write",
        args={}, reason=None, state=StepState.SUCCEEDED, idempotency_key=f"reversi-run_1-{seq}",
        started_at=0.0, rollback_state=state,
    )


@pytest.mark.parametrize(
    ("later", "earlier", "complete", "words"),
    [
        ("unrecoverable", "deferred", False, None),
        ("compensated", "deferred", False, "the later step is irreversible, yet the rollback made it compensated"),
        ("unrecoverable", "compensated", False, "yet the earlier one is compensated instead of deferred"),
        ("unrecoverable", "deferred", True, "a rollback with a deferred step reported complete"),
    ],
)
def test_an_irreversible_later_step_must_leave_the_earlier_one_deferred(
    later: str, earlier: str, complete: bool, words: str | None
) -> None:
    """The dependency check's branch for an irreversible later tool (a refund of a payment
    intent the run created): it accepts only unrecoverable + deferred + incomplete."""
    from certification import checks
    from reversi_core.engine import RollbackReport
    from reversi_core.journal import RollbackState

    report = RollbackReport(
        run_id="run_1",
        complete=complete,
        steps=[_step(2, RollbackState(later)), _step(1, RollbackState(earlier))],
    )
    if words is None:
        checks._stands_for_good("pair", report, 1, 2)
        return
    with pytest.raises(runner.CheckFailed, match=words):
        checks._stands_for_good("pair", report, 1, 2)
