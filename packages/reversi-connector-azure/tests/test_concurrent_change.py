"""The fixture's concurrent_change, driven as the coming 13th certification check will drive it.

For the first example of each restoring tool: the forward call through a real run,
someone else's change through the fake, a rollback that must refuse (the step
``compensation_failed``, the reason naming the change, the change still there), then
the change reverted and a rollback that completes with the backend as before (backups
aside).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reversi_connector_azure.testing import (
    EXAMPLES,
    certification_fixture,
    concurrent_change,
    without_backups,
)
from reversi_core import Run, SQLiteJournal, compensator_for, executor_for, registry_for
from reversi_core.journal import RollbackState

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("tool", ["azure.put_blob", "azure.delete_blob"])
async def test_a_concurrent_change_is_refused_then_the_undo_completes_once_reverted(
    tool: str, tmp_path: Path
) -> None:
    fixture = certification_fixture()
    args = EXAMPLES[tool][0]
    assert isinstance(args, dict)
    with fixture.backend(tmp_path) as server:
        assert fixture.seed is not None
        fixture.seed(server)
        before = fixture.fingerprint(server)
        azure = fixture.build(server)
        journal = SQLiteJournal.open(tmp_path / "data")
        run = Run.start(journal, registry_for([azure]), executor=executor_for([azure]))
        _, result = await run.call(tool, args)
        change = concurrent_change(server, tool, args, result)
        assert change is not None
        changed = fixture.fingerprint(server)
        report = await run.rollback(compensate=compensator_for([azure]))
        step = run.steps()[0]
        assert not report.complete
        assert step.rollback_state is RollbackState.COMPENSATION_FAILED
        assert change.what in (step.rollback_reason or "")
        assert fixture.fingerprint(server) == changed
        change.revert()
        assert (await run.rollback(compensate=compensator_for([azure]))).complete
        assert without_backups(fixture.fingerprint(server)) == without_backups(before)
        await azure.aclose()
        journal.close()
