"""A later change refuses the undo until a person insists (RB-10), on the fake and on Azurite.

The certification suite's concurrent_change check drives the fixture's change on the
fake; here the other writer goes through each backend itself, the refusal is read from
the journal, and then a person lets the step overwrite (``Run.allow_overwrite``, what
``reversi rollback RUN --overwrite STEP`` records): the undo runs with
``CallContext.overwrite`` and puts the blob back as it was before the call, over the
later change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _azure_backends import Backend

from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio

LATER = b"someone's later edit"


async def _refused_then_insisted(backend: Backend, tmp_path: Path, tool: str, content: str | None) -> None:
    azure = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([azure]), executor=executor_for([azure]))
    args = {"container": backend.container, "blob": "doc"}
    step, _ = await run.call(tool, {**args, "content": content} if content is not None else args)
    backend.write("doc", LATER)
    report = await run.rollback(compensate=compensator_for([azure]))
    refused = run.steps()[0]
    assert not report.complete
    assert refused.rollback_state is RollbackState.COMPENSATION_FAILED
    assert f"{backend.container}/doc changed since the call" in (refused.rollback_reason or "")
    assert "--overwrite" in (refused.rollback_reason or "")
    assert backend.read("doc") == LATER
    run.allow_overwrite(step, by="a person")
    assert (await run.rollback(compensate=compensator_for([azure]))).complete
    journal.close()


@pytest.mark.parametrize("tool", ["azure.put_blob", "azure.delete_blob"])
async def test_a_person_may_let_the_undo_overwrite_a_later_change(
    backend: Backend, tmp_path: Path, tool: str
) -> None:
    backend.write("doc", b"before the run")
    content = "the agent's" if tool == "azure.put_blob" else None
    await _refused_then_insisted(backend, tmp_path, tool, content)
    assert backend.read("doc") == b"before the run"


async def test_a_person_may_let_the_undo_of_a_new_blob_delete_a_later_change(
    backend: Backend, tmp_path: Path
) -> None:
    await _refused_then_insisted(backend, tmp_path, "azure.put_blob", "the agent's new blob")
    assert backend.read("doc") is None


async def test_the_restore_refuses_without_overwrite_and_copies_back_with_it(backend: Backend) -> None:
    """Called directly: a context without ``overwrite`` (every forward call's) is refused."""
    backend.write("doc", b"before")
    azure = backend.connector()
    made = await azure.call("azure.put_blob", {"container": backend.container, "blob": "doc", "content": "agent"})
    backend.write("doc", LATER)
    restore = {
        "container": backend.container,
        "blob": "doc",
        "backup_blob": made["backup_blob"],
        "expected_etag": made["etag"],
        "expected_md5": made["content_md5"],
    }
    with pytest.raises(ToolError) as refused:
        await azure.call("azure.restore_blob", restore, CallContext(idempotency_key="agent-1"))
    assert refused.value.code == "changed_since"
    assert backend.read("doc") == LATER
    done = await azure.call(
        "azure.restore_blob", restore, CallContext(idempotency_key="undo-1", compensation=True, overwrite=True)
    )
    assert done["action"] == "copied_back"
    assert backend.read("doc") == b"before"
