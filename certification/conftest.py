"""pytest wiring of the certification suite: the matrix, ``--connector``, the results file.

``test_check`` in test_certification.py is parametrized here over every installed
connector (the ``reversi.connectors`` entry points) times every check id, with ids
``<connector>-<check>``. ``--connector NAME`` (repeatable) narrows the matrix. Each
outcome is kept for the session; at the end of the session the outcomes are written to
``certification/.results/<connector>.json``, from which ``certification/report.py
--from-results`` renders docs/certification.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from certification import runner  # noqa: E402 - importable only after the line above puts the repository root on sys.path
from reversi_core.testing import CHECKS  # noqa: E402 - as above

OUTCOMES = pytest.StashKey[dict[tuple[str, str], runner.Outcome]]()
LOADED = pytest.StashKey[dict[str, runner.Loaded]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("certification").addoption(
        "--connector",
        action="append",
        default=[],
        metavar="NAME",
        help="certify only this installed connector (repeatable; default: every one)",
    )


def selected(config: pytest.Config) -> list[str]:
    """The connectors named with ``--connector`` (empty: all)."""
    return list(config.getoption("connector") or [])


def loaded_connectors(config: pytest.Config) -> dict[str, runner.Loaded]:
    """Discovered connectors (cached for the session)."""
    if LOADED not in config.stash:
        config.stash[LOADED] = runner.discover(selected(config) or None)
    return config.stash[LOADED]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[OUTCOMES] = {}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.name != "test_check":
        return
    names = sorted(loaded_connectors(metafunc.config))
    for name in selected(metafunc.config):
        if name not in names:
            raise pytest.UsageError(
                f"--connector {name}: no such installed connector "
                f"(installed: {', '.join(runner.connector_names()) or 'none'})"
            )
    metafunc.parametrize(
        ("connector", "check"),
        [pytest.param(n, c, id=f"{n}-{c}") for n in names for c in CHECKS],
    )


@pytest.fixture(scope="session")
def discovered(request: pytest.FixtureRequest) -> dict[str, runner.Loaded]:
    """Every installed connector in scope, with its fixture (or the error loading it)."""
    return loaded_connectors(request.config)


@pytest.fixture(scope="session")
def outcomes(request: pytest.FixtureRequest) -> dict[tuple[str, str], runner.Outcome]:
    """``{(connector, check): outcome}`` recorded during this session."""
    return request.config.stash[OUTCOMES]


def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    recorded = session.config.stash.get(OUTCOMES, {})
    if not recorded:
        return
    by_connector: dict[str, dict[str, runner.Outcome]] = {}
    for (name, check), outcome in recorded.items():
        by_connector.setdefault(name, {})[check] = outcome
    loaded = session.config.stash.get(LOADED, {})
    residue = {name: runner.residue_of(loaded[name]) for name in by_connector if name in loaded}
    runner.write_results(by_connector, residue)
