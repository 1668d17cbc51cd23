"""A second writer slipped into every gap of every write, on the fake and on Azurite.

:class:`InterposingTransport` lets the other writer change the blob just before the
connector's next request leaves. The outcome demanded everywhere: a refusal (412, or 409
``BlobAlreadyExists``), the other writer's change intact, a clear error. Azurite 3.35
enforces every condition the connector sends (``If-Match``, ``If-None-Match: *``,
``x-ms-source-if-match``), so every gap is raced on both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from _azure_backends import Backend

from reversi_connector_azure import BACKUP_PREFIX, AzureConnector
from reversi_connector_azure.testing import InterposingTransport
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio

OTHER = b"the other writer's version"


def is_copy(request: httpx.Request) -> bool:
    return request.method == "PUT" and "x-ms-copy-source" in request.headers


def is_upload(request: httpx.Request) -> bool:
    return request.method == "PUT" and "x-ms-copy-source" not in request.headers


def is_delete(request: httpx.Request) -> bool:
    return request.method == "DELETE"


def racing(
    backend: Backend, when: Callable[[httpx.Request], bool], action: Callable[[], None]
) -> tuple[AzureConnector, InterposingTransport]:
    transport = InterposingTransport(when, action, verify=backend.verify)
    return backend.connector(transport=transport), transport


def restore_args(result: dict[str, object]) -> dict[str, object]:
    return {
        "container": result["container"],
        "blob": result["blob"],
        "backup_blob": result["backup_blob"],
        "expected_etag": result["etag"],
        "expected_md5": result["content_md5"],
    }


async def test_a_change_between_the_read_and_the_backup_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    azure, transport = racing(backend, is_copy, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call(
            "azure.put_blob", {"container": backend.container, "blob": "doc", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "changed after it was read" in str(refused.value)
    assert backend.read("doc") == OTHER
    assert backend.keys_now() == ["doc"]


async def test_a_change_between_the_backup_and_the_write_is_not_overwritten(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    azure, transport = racing(backend, is_upload, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call(
            "azure.put_blob", {"container": backend.container, "blob": "doc", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert "nothing was overwritten" in str(refused.value)
    assert backend.read("doc") == OTHER
    backups = [k for k in backend.keys_now() if k.startswith(BACKUP_PREFIX)]
    assert len(backups) == 1
    assert backend.read(backups[0]) == b"original"
    assert backups[0] in str(refused.value)


async def test_a_blob_created_by_someone_else_before_a_new_write_is_not_overwritten(
    backend: Backend,
) -> None:
    azure, transport = racing(backend, is_upload, lambda: backend.write("new", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call(
            "azure.put_blob", {"container": backend.container, "blob": "new", "content": "agent"}
        )
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (409, "precondition_failed")
    assert "it did not exist" in str(refused.value)
    assert backend.read("new") == OTHER


async def test_a_change_between_the_backup_and_the_delete_is_not_deleted(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on delete (it would delete OTHER)."""
    backend = fake_backend
    backend.write("doc", b"original")
    azure, transport = racing(backend, is_delete, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.delete_blob", {"container": backend.container, "blob": "doc"})
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert backend.read("doc") == OTHER


async def test_a_delete_by_someone_else_between_the_backup_and_the_delete_fails_the_call(
    backend: Backend,
) -> None:
    backend.write("doc", b"original")
    azure, transport = racing(backend, is_delete, lambda: backend.remove("doc"))
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.delete_blob", {"container": backend.container, "blob": "doc"})
    assert transport.fired
    if backend.fake is not None:  # as the service documents a delete of a missing blob
        assert (refused.value.status, refused.value.code) == (404, "not_found")
        assert "deleted by someone else" in str(refused.value)
    else:  # Azurite answers If-Match on a missing blob with 412 ConditionNotMet
        assert (refused.value.status, refused.value.code) == (412, "precondition_failed")
    assert backend.read("doc") is None  # gone, as the other writer left it


@pytest.mark.parametrize("existed", [True, False], ids=["overwrite", "new-blob"])
async def test_a_change_after_the_write_stops_the_rollback_until_it_is_reverted(
    backend: Backend, tmp_path: Path, existed: bool
) -> None:
    if existed:
        backend.write("doc", b"original")
    azure = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([azure]), executor=executor_for([azure]))
    await run.call(
        "azure.put_blob", {"container": backend.container, "blob": "doc", "content": "agent"}
    )
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([azure]))
    assert not report.complete
    step = run.steps()[0]
    assert step.rollback_state is RollbackState.COMPENSATION_FAILED
    assert f"{backend.container}/doc changed since the call" in (step.rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.write("doc", b"agent")  # the other writer puts back what the agent wrote
    again = await run.rollback(compensate=compensator_for([azure]))
    assert again.complete
    assert backend.read("doc") == (b"original" if existed else None)
    journal.close()


async def test_a_blob_recreated_after_a_delete_stops_the_rollback(
    backend: Backend, tmp_path: Path
) -> None:
    backend.write("doc", b"original")
    azure = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([azure]), executor=executor_for([azure]))
    await run.call("azure.delete_blob", {"container": backend.container, "blob": "doc"})
    backend.write("doc", OTHER)
    report = await run.rollback(compensate=compensator_for([azure]))
    assert not report.complete
    assert "it now holds ETag" in (run.steps()[0].rollback_reason or "")
    assert backend.read("doc") == OTHER
    backend.remove("doc")
    assert (await run.rollback(compensate=compensator_for([azure]))).complete
    assert backend.read("doc") == b"original"
    journal.close()


async def test_a_change_inside_the_restore_is_refused_by_the_precondition(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on rewrite."""
    backend = fake_backend
    backend.write("doc", b"original")
    made = await backend.connector().call(
        "azure.put_blob", {"container": backend.container, "blob": "doc", "content": "agent"}
    )
    azure, transport = racing(backend, is_copy, lambda: backend.write("doc", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.restore_blob", restore_args(made))
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("doc") == OTHER


async def test_a_change_inside_the_undo_of_a_new_blob_is_refused_by_the_precondition(
    fake_backend: Backend,
) -> None:
    """Fake only: fake-gcs-server ignores ifGenerationMatch on delete."""
    backend = fake_backend
    made = await backend.connector().call(
        "azure.put_blob", {"container": backend.container, "blob": "new", "content": "agent"}
    )
    azure, transport = racing(backend, is_delete, lambda: backend.write("new", OTHER))
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.restore_blob", restore_args(made))
    assert transport.fired
    assert (refused.value.status, refused.value.code) == (412, "changed_since")
    assert backend.read("new") == OTHER
