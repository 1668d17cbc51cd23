"""Fixtures of the reversi-core tests: a journal in a temporary data directory, the
in-memory connector of ``_memconnector.py`` and runs over them."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from _memconnector import MemConnector  # noqa: E402 - found only after the tests folder is put on sys.path above

from reversi_core import Registry, Run, SQLiteJournal, registry_for  # noqa: E402 - as above
from reversi_core.connector import executor_for  # noqa: E402 - as above


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory that does not exist yet."""
    return tmp_path / "data"


@pytest.fixture
def journal(data_dir: Path) -> Iterator[SQLiteJournal]:
    j = SQLiteJournal.open(data_dir)
    yield j
    j.close()


@pytest.fixture
def mem() -> MemConnector:
    return MemConnector()


@pytest.fixture
def registry() -> Registry:
    return registry_for([MemConnector])


@pytest.fixture
def make_run(journal: SQLiteJournal, registry: Registry, mem: MemConnector) -> Callable[..., Run]:
    """``make_run(scope=..., approver=..., executor=...)``: a new run over ``mem``."""

    def make(**kwargs: Any) -> Run:
        kwargs.setdefault("executor", executor_for([mem]))
        return Run.start(journal, registry, **kwargs)

    return make
