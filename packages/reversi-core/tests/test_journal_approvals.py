"""The journal's approval queue (journal/_approvals.py), on both stores."""

from __future__ import annotations

import time

import pytest

from reversi_core.journal import Journal, open_journal
from reversi_core.journal._approvals import (
    ApprovalDecisionError,
    ApprovalState,
    approvals_of,
    args_hash,
)
from reversi_core.redact import REDACTED, register_secret


def test_the_hash_is_of_canonical_json_key_order_aside() -> None:
    assert args_hash({"a": 1, "b": [1, 2]}) == args_hash({"b": [1, 2], "a": 1})
    assert args_hash({"a": 1}) != args_hash({"a": 2})
    assert args_hash({"a": "1"}) != args_hash({"a": 1})


def test_a_request_waits_and_an_identical_call_gets_its_own(journal: Journal) -> None:
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    first = queue.request_approval(
        "r1", "mem.delete", {"key": "a"}, "tidy up", requested_by="gw", timeout=30
    )
    assert first.state is ApprovalState.WAITING
    assert first.expires_at == pytest.approx(first.requested_at + 30)
    same = queue.request_approval(
        "r1", "mem.delete", {"key": "a"}, "tidy up", requested_by="gw", timeout=30
    )
    other = queue.request_approval(
        "r1", "mem.delete", {"key": "b"}, "tidy up", requested_by="gw", timeout=30
    )
    assert len({first.id, same.id, other.id}) == 3
    assert {a.id for a in queue.list_approvals(waiting=True)} == {first.id, same.id, other.id}


def test_one_decision_releases_exactly_one_of_two_identical_calls(journal: Journal) -> None:
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    args = {"key": "a"}
    one = queue.request_approval("r1", "mem.delete", args, None, requested_by="gw", timeout=30)
    two = queue.request_approval("r1", "mem.delete", args, None, requested_by="gw", timeout=30)
    queue.decide_approval(one.id, approved=True, by="ann", args_hash=one.args_hash)
    assert queue.get_approval(one.id).state is ApprovalState.APPROVED
    assert queue.get_approval(two.id).state is ApprovalState.WAITING  # waits for its own
    assert [a.id for a in queue.list_approvals(waiting=True)] == [two.id]


def test_a_decision_is_bound_to_the_arguments_it_was_shown(journal: Journal) -> None:
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    a = queue.request_approval(
        "r1", "mem.delete", {"key": "a"}, None, requested_by="gw", timeout=30
    )
    b = queue.request_approval(
        "r1", "mem.delete", {"key": "b"}, None, requested_by="gw", timeout=30
    )
    with pytest.raises(ApprovalDecisionError, match="other arguments"):
        queue.decide_approval(a.id, approved=True, by="ann", args_hash=b.args_hash)
    assert queue.get_approval(a.id).state is ApprovalState.WAITING  # nothing written
    decided = queue.decide_approval(a.id, approved=True, by="ann", args_hash=a.args_hash, note="ok")
    assert (decided.state, decided.decided_by, decided.note) == (
        ApprovalState.APPROVED,
        "ann",
        "ok",
    )
    assert decided.decided_at is not None
    assert decided.decided_at <= time.time()
    # the other call's request is untouched: it needs its own decision
    assert queue.get_approval(b.id).state is ApprovalState.WAITING
    with pytest.raises(ApprovalDecisionError, match="approved already"):
        queue.decide_approval(a.id, approved=False, by="bob", args_hash=a.args_hash)
    events = [e for e in journal.list_events("r1") if e["kind"].startswith("approval_")]
    assert [e["kind"] for e in events] == [
        "approval_requested",
        "approval_requested",
        "approval_decided",
    ]
    assert events[-1]["detail"]["by"] == "ann"
    assert events[-1]["detail"]["state"] == "approved"


def test_an_expired_request_takes_no_decision(journal: Journal) -> None:
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    a = queue.request_approval(
        "r1", "mem.delete", {"key": "a"}, None, requested_by="gw", timeout=0.01
    )
    time.sleep(0.05)
    assert queue.get_approval(a.id).current_state() is ApprovalState.EXPIRED
    assert queue.list_approvals(waiting=True) == []
    with pytest.raises(ApprovalDecisionError, match="expired already"):
        queue.decide_approval(a.id, approved=True, by="ann", args_hash=a.args_hash)
    assert queue.expire_approval(a.id).state is ApprovalState.EXPIRED
    # a decided request is not expired by the gateway's late timeout
    b = queue.request_approval(
        "r1", "mem.delete", {"key": "b"}, None, requested_by="gw", timeout=30
    )
    queue.decide_approval(b.id, approved=False, by="ann", args_hash=b.args_hash)
    assert queue.expire_approval(b.id).state is ApprovalState.REFUSED


def test_unknown_requests_and_nameless_decisions_are_refused(journal: Journal) -> None:
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    with pytest.raises(ApprovalDecisionError, match="no approval request"):
        queue.get_approval("nope")
    a = queue.request_approval("r1", "mem.delete", {}, None, requested_by="gw", timeout=30)
    with pytest.raises(ApprovalDecisionError, match="name of who decided"):
        queue.decide_approval(a.id, approved=True, by="  ", args_hash=a.args_hash)


def test_secrets_in_arguments_never_reach_the_queue(journal: Journal) -> None:
    register_secret("s3cr3t-approval-token")
    journal.create_run("r1", ["mem.write"], None)
    queue = approvals_of(journal)
    args = {"key": "k", "value": "s3cr3t-approval-token"}
    a = queue.request_approval("r1", "mem.put", args, None, requested_by="gw", timeout=30)
    assert a.args_hash == args_hash(args)  # bound to the real arguments
    assert queue.get_approval(a.id).args["value"] == REDACTED


def test_another_handle_sees_the_decision(location: str) -> None:
    """The gateway and the console are separate processes: two handles on one journal."""
    with open_journal(location) as gateway, open_journal(location) as console:
        gateway.create_run("r1", ["mem.write"], None)
        a = approvals_of(gateway).request_approval(
            "r1", "mem.delete", {"key": "a"}, None, requested_by="gw", timeout=30
        )
        [waiting] = approvals_of(console).list_approvals(waiting=True)
        assert waiting.id == a.id
        approvals_of(console).decide_approval(a.id, approved=True, by="ann", args_hash=a.args_hash)
        assert approvals_of(gateway).get_approval(a.id).state is ApprovalState.APPROVED
