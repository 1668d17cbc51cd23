"""A second writer slipped into every gap of every write, on the fake and on fake-gcs-server.

:class:`InterposingTransport` lets the other writer change the object just before the
connector's next request leaves. The outcome demanded everywhere: a refusal (412, or 404
for a generation that is gone), the other writer's change intact, a clear error.

What fake-gcs-server 1.54 enforces (docs/connectors/gcp.md): ``ifGenerationMatch`` on a
multipart upload, and ``sourceGeneration`` on a rewrite (404 once that generation is
gone); it ignores ``ifGenerationMatch`` on delete and rewrite. The gaps that only those
close are raced on the fake alone: the fake, not the emulator, is the oracle of those 412s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from _gcp_backends import Backend

from reversi_connector_gcp import BACKUP_PREFIX, GcpConnector
from reversi_connector_gcp.testing import InterposingTransport
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio

OTHER = b"the other writer's version"


def is_rewrite(request: httpx.Request) -> bool:
    return request.method == "POST" and "/rewriteTo/" in request.url.path


def is_upload(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path.startswith("/upload/")


def is_delete(request: httpx.Request) -> bool:
    return request.method == "DELETE"


def racing(
    backend: Backend, when: Callable[[httpx.Request], bool], action: Callable[[], None]
) -> tuple[GcpConnector, InterposingTransport]:
    transport = InterposingTransport(when, action)
    return backend.connector(transport=transport), transport


def restore_args(result: dict[str, object]) -> dict[str, object]:
    return {
        "bucket": result["bucket"],
        "key": result["key"],
        "backup_key": result["backup_key"],
        "expected_generation": result["generation"],
        "expected_crc32c": result["crc32c"],
        "expected_md5": result["md5"],
    }


async def test_a_change_between_the_read_and_the_backup_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    gcp, transport = racing(backend, is_rewrite, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call(
            "gcp.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (404, "precondition_failed")
    assert "changed after it was read" in str(refused.value)
    assert backend.read("doc") == OTHER
    assert backend.keys_now() == ["doc"]


async def test_a_change_between_the_backup_and_the_write_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    gcp, transport = racing(backend, is_upload, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call(
            "gcp.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "nothing was overwritten" in str(refused.value)
    assert backend.read("doc") == OTHER
    backups = [k for k in backend.keys_now() if k.startswith(BACKUP_PREFIX)]
    assert len(backups) == 1
    assert backend.read(backups[0]) == b"original"
    assert backups[0] in str(refused.value)


async def test_an_object_created_by_someone_else_before_a_new_write_is_not_overwritten(
    backend: Backend,
) -> None:
    gcp, transport = racing(backend, is_upload, lambda: backend.write("new", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call(
            "gcp.put_object", {"bucket": backend.bucket, "key": "new", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "it did not exist" in str(refused.value)
    assert backend.read("new") == OTHER


async def test_a_change_between_the_backup_and_the_delete_is_not_deleted(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on delete (it would delete OTHER)."""
    backend = fake_backend
    backend.write("doc", b"original")
    gcp, transport = racing(backend, is_delete, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.delete_object", {"bucket": backend.bucket, "key": "doc"})
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert backend.read("doc") == OTHER


async def test_a_delete_by_someone_else_between_the_backup_and_the_delete_fails_the_call(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    gcp, transport = racing(backend, is_delete, lambda: backend.remove("doc"))
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.delete_object", {"bucket": backend.bucket, "key": "doc"})
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (404, "not_found")
    assert "deleted by someone else" in str(refused.value)


@pytest.mark.parametrize("existed", [True, False], ids=["overwrite", "new-object"])
async def test_a_change_after_the_write_stops_the_rollback_until_it_is_reverted(
    backend: Backend, tmp_path: Path, existed: bool
) -> None:
    if existed:
        backend.write("doc", b"original")
    gcp = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([gcp]), executor=executor_for([gcp]))
    await run.call("gcp.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"})
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([gcp]))
    assert not report.complete
    step = run.steps()[0]
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert f"gs://{backend.bucket}/doc changed since the call" in (step.rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.write("doc", b"agent")  # the other writer puts back what the agent wrote
    again = await run.rollback(compensate=compensator_for([gcp]))
    assert again.complete
    assert backend.read("doc") == (b"original" if existed else None)
    journal.close()


async def test_an_object_recreated_after_a_delete_stops_the_rollback(
    backend: Backend, tmp_path: Path
) -> None:
    backend.write("doc", b"original")
    gcp = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([gcp]), executor=executor_for([gcp]))
    await run.call("gcp.delete_object", {"bucket": backend.bucket, "key": "doc"})
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([gcp]))
    assert not report.complete
    assert "it now holds generation" in (run.steps()[0].rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.remove("doc")
    assert (await run.rollback(compensate=compensator_for([gcp]))).complete
    assert backend.read("doc") == b"original"
    journal.close()


async def test_a_change_inside_the_restore_is_refused_by_the_precondition(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on rewrite."""
    backend = fake_backend
    backend.write("doc", b"original")
    made = await backend.connector().call(
        "gcp.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"}
    )
    gcp, transport = racing(backend, is_rewrite, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.restore_object", restore_args(made))
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("doc") == OTHER


async def test_a_change_inside_the_undo_of_a_new_object_is_refused_by_the_precondition(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on delete."""
    backend = fake_backend
    made = await backend.connector().call(
        "gcp.put_object", {"bucket": backend.bucket, "key": "new", "content": "agent"}
    )
    gcp, transport = racing(backend, is_delete, lambda: backend.write("new", OTHER))
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.restore_object", restore_args(made))
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("new") == OTHER


async def test_the_emulator_ignores_the_delete_precondition_which_is_why_the_fake_models_it(
    emulator_backend: Backend,
) -> None:
    """The difference written down in docs/connectors/gcp.md, checked: if this starts failing,
    fake-gcs-server enforces it now and the fake-only race tests above can run on it too."""
    emulator_backend.write("doc", b"v")
    http = emulator_backend.emulator.http if emulator_backend.emulator else None
    assert http is not None
    answer = http.delete(
        f"/storage/v1/b/{emulator_backend.bucket}/o/doc", params={"ifGenerationMatch": "1"}
    )
    assert answer.status_code in (200, 204)
    assert emulator_backend.read("doc") is None
