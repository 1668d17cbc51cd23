"""A second writer slipped into every gap of every write, on the fake and on moto.

Each gap is hit for real: :class:`InterposingTransport` lets the other writer change the
key just before the connector's next request leaves. The outcome demanded everywhere: a
412 (or the restore's own refusal), the other writer's change intact, a clear error.

What moto enforces (docs/connectors/aws.md): ``If-Match``/``If-None-Match`` on
PutObject and ``If-Match`` on DeleteObject; it ignores ``x-amz-copy-source-if-match``
and a copy target's ``If-Match``/``If-None-Match``. Where it ignores the copy's
condition the later conditional write still refuses (the backup gap), and the restore
reads and compares before copying; only the instant between that read and the copy is
left to the precondition, so that gap is raced on the fake alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from _aws_backends import Backend

from reversi_connector_aws import BACKUP_PREFIX, AwsConnector
from reversi_connector_aws.testing import InterposingTransport
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio

OTHER = b"the other writer's version"


def is_copy(request: httpx.Request) -> bool:
    return request.method == "PUT" and "x-amz-copy-source" in request.headers


def is_plain_put(request: httpx.Request) -> bool:
    return request.method == "PUT" and "x-amz-copy-source" not in request.headers


def is_delete(request: httpx.Request) -> bool:
    return request.method == "DELETE"


def racing(
    backend: Backend, when: Callable[[httpx.Request], bool], action: Callable[[], None]
) -> tuple[AwsConnector, InterposingTransport]:
    transport = InterposingTransport(when, action)
    return backend.connector(transport=transport), transport


async def test_a_change_between_the_read_and_the_backup_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    aws, transport = racing(backend, is_copy, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await aws.call(
            "aws.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
        )
    assert transport.fired
    assert refused.value.status == 412
    assert refused.value.code == "precondition_failed"
    assert "changed after it was read" in str(refused.value) or "changed by someone else" in str(
        refused.value
    )
    assert backend.read("doc") == OTHER


async def test_a_change_between_the_backup_and_the_write_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    aws, transport = racing(backend, is_plain_put, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await aws.call(
            "aws.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "nothing was overwritten" in str(refused.value)
    assert backend.read("doc") == OTHER
    backups = [k for k in backend.keys_now() if k.startswith(BACKUP_PREFIX)]
    assert len(backups) == 1
    assert backend.read(backups[0]) == b"original"
    assert backups[0] in str(refused.value)


async def test_a_key_created_by_someone_else_before_a_new_write_is_not_overwritten(
    backend: Backend,
) -> None:
    aws, transport = racing(backend, is_plain_put, lambda: backend.write("new", OTHER))
    with pytest.raises(ToolError) as refused:
        await aws.call(
            "aws.put_object", {"bucket": backend.bucket, "key": "new", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "it did not exist" in str(refused.value)
    assert backend.read("new") == OTHER


async def test_a_change_between_the_backup_and_the_delete_is_not_deleted(backend: Backend) -> None:
    backend.write("doc", b"original")
    aws, transport = racing(backend, is_delete, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.delete_object", {"bucket": backend.bucket, "key": "doc"})
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert backend.read("doc") == OTHER


async def test_a_delete_by_someone_else_between_the_backup_and_the_delete_fails_the_call(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    aws, transport = racing(backend, is_delete, lambda: backend.remove("doc"))
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.delete_object", {"bucket": backend.bucket, "key": "doc"})
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (404, "not_found")
    assert "deleted by someone else" in str(refused.value)


@pytest.mark.parametrize("existed", [True, False], ids=["overwrite", "new-key"])
async def test_a_change_after_the_write_stops_the_rollback_until_it_is_reverted(
    backend: Backend, tmp_path: Path, existed: bool
) -> None:
    """The gap between the call and its undo: compensation_failed naming the change, then done."""
    if existed:
        backend.write("doc", b"original")
    aws = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([aws]), executor=executor_for([aws]))
    await run.call("aws.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"})
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([aws]))
    assert not report.complete
    step = run.steps()[0]
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert f"s3://{backend.bucket}/doc changed since the call" in (step.rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.write("doc", b"agent")  # the other writer takes their change back
    again = await run.rollback(compensate=compensator_for([aws]))
    assert again.complete
    assert backend.read("doc") == (b"original" if existed else None)
    journal.close()


async def test_a_key_recreated_after_a_delete_stops_the_rollback(
    backend: Backend, tmp_path: Path
) -> None:
    backend.write("doc", b"original")
    aws = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([aws]), executor=executor_for([aws]))
    await run.call("aws.delete_object", {"bucket": backend.bucket, "key": "doc"})
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([aws]))
    assert not report.complete
    assert "it now holds ETag" in (run.steps()[0].rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.remove("doc")
    assert (await run.rollback(compensate=compensator_for([aws]))).complete
    assert backend.read("doc") == b"original"
    journal.close()


async def test_a_change_inside_the_restore_is_refused_by_the_precondition(
    fake_backend: Backend,
) -> None:
    """Between the restore's read and its copy-back (fake only: moto ignores a copy target's If-Match)."""
    backend = fake_backend
    backend.write("doc", b"original")
    plain = backend.connector()
    made = await plain.call(
        "aws.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
    )
    aws, transport = racing(backend, is_copy, lambda: backend.write("doc", OTHER))
    args = {
        "bucket": backend.bucket,
        "key": "doc",
        "backup_key": made["backup_key"],
        "expected_etag": made["etag"],
    }
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.restore_object", args)
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("doc") == OTHER


async def test_a_change_inside_the_undo_of_a_new_key_is_refused_by_the_precondition(
    backend: Backend,
) -> None:
    """Between the restore's read and its conditional delete (moto enforces this one too)."""
    plain = backend.connector()
    made = await plain.call(
        "aws.put_object", {"bucket": backend.bucket, "key": "new", "content": "agent"}
    )
    aws, transport = racing(backend, is_delete, lambda: backend.write("new", OTHER))
    args = {
        "bucket": backend.bucket,
        "key": "new",
        "backup_key": None,
        "expected_etag": made["etag"],
    }
    with pytest.raises(ToolError) as refused:
        await aws.call("aws.restore_object", args)
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("new") == OTHER
