"""A later change refuses the undo until a person insists (RB-10), on the fake and on fake-gcs-server.

The certification suite's concurrent_change check drives the fixture's change on the
fake; here the other writer goes through each backend itself, the refusal is read from
the journal, and then a person lets the step overwrite (``Run.allow_overwrite``, what
``reversi rollback RUN --overwrite STEP`` records): the undo runs with
``CallContext.overwrite`` and puts the object back as it was before the call, over the
later change. (The refusal comes from the restore's read and compare, which the
emulator's lax preconditions do not weaken.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _gcp_backends import Backend

from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.connector import CallContext
from reversi_core.errors import ToolError
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio

LATER = b"someone's later edit"


async def _refused_then_insisted(backend: Backend, tmp_path: Path, tool: str, content: str | None) -> None:
    gcp = backend.connector()
    journal = SQLiteJournal.open(tmp_path / "data")
    run = Run.start(journal, registry_for([gcp]), executor=executor_for([gcp]))
    args = {"bucket": backend.bucket, "key": "doc"}
    step, _ = await run.call(tool, {**args, "content": content} if content is not None else args)
    backend.write("doc", LATER)
    report = await run.rollback(compensate=compensator_for([gcp]))
    refused = run.steps()[0]
    assert not report.complete
    assert refused.rollback_state is RollbackState.COMPENSATION_FAILED
    assert f"gs://{backend.bucket}/doc changed since the call" in (refused.rollback_reason or "")
    assert "--overwrite" in (refused.rollback_reason or "")
    assert backend.read("doc") == LATER
    run.allow_overwrite(step, by="a person")
    assert (await run.rollback(compensate=compensator_for([gcp]))).complete
    journal.close()


@pytest.mark.parametrize("tool", ["gcp.put_object", "gcp.delete_object"])
async def test_a_person_may_let_the_undo_overwrite_a_later_change(
    backend: Backend, tmp_path: Path, tool: str
) -> None:
    backend.write("doc", b"before the run")
    content = "the agent's" if tool == "gcp.put_object" else None
    await _refused_then_insisted(backend, tmp_path, tool, content)
    assert backend.read("doc") == b"before the run"


async def test_a_person_may_let_the_undo_of_a_new_object_delete_a_later_change(
    backend: Backend, tmp_path: Path
) -> None:
    await _refused_then_insisted(backend, tmp_path, "gcp.put_object", "the agent's new object")
    assert backend.read("doc") is None


async def test_the_restore_refuses_without_overwrite_and_copies_back_with_it(backend: Backend) -> None:
    """Called directly: a context without ``overwrite`` (every forward call's) is refused."""
    backend.write("doc", b"before")
    gcp = backend.connector()
    made = await gcp.call("gcp.put_object", {"bucket": backend.bucket, "key": "doc", "content": "agent"})
    backend.write("doc", LATER)
    restore = {
        "bucket": backend.bucket,
        "key": "doc",
        "backup_key": made["backup_key"],
        "expected_generation": made["generation"],
        "expected_crc32c": made["crc32c"],
        "expected_md5": made["md5"],
    }
    with pytest.raises(ToolError) as refused:
        await gcp.call("gcp.restore_object", restore, CallContext(idempotency_key="agent-1"))
    assert refused.value.code == "changed_since"
    assert backend.read("doc") == LATER
    done = await gcp.call(
        "gcp.restore_object", restore, CallContext(idempotency_key="undo-1", compensation=True, overwrite=True)
    )
    assert done["action"] == "copied_back"
    assert backend.read("doc") == b"before"
