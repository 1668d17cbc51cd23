#!/usr/bin/env python3
"""Run a connector's live scenario against its real vendor and record it with vcrpy.

    python scripts/live.py NAME                  against the vendor, recorded (HTTP connectors)
    python scripts/live.py NAME --no-record      against the vendor, nothing written
    python scripts/live.py NAME --test-backend   against its certification backend (the fake)

``nox -s live -- NAME`` runs this with NAME and core installed. The scenario is the
``live`` of the connector's certification fixture (``reversi_core.testing.LiveScenario``):
a few forward calls through the real engine and journal, their rollback, and checks of
what the vendor then holds, on throwaway objects named with a random suffix. The
connector is built from the environment, as ``reversi-connectors serve NAME`` would be;
the variables it needs (the connector's credential and settings, and the scenario's own
such as ``REVERSI_LIVE_GITHUB_REPO``) are listed, and the session stops, when one is
missing. An HTTP connector's exchanges are recorded into
``packages/reversi-connector-NAME/tests/cassettes/<scenario>.yaml`` (or ``--cassettes
DIR``), every credential scrubbed; the file is written only once it is checked free of
every form of every credential and replays. The journal goes to a temporary folder,
kept (and printed) when the scenario fails, so that what it left can be rolled back
with ``reversi rollback``.

Exit 0 when the scenario passed (and its cassette was written), or when the connector
declares that it has nothing live to run (fs: no remote vendor); 1 when the scenario
failed or its recording was refused; 2 when a variable is missing, NAME is not an
installed connector, or its fixture declares no live scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _fail(message: str, status: int) -> int:
    print(f"live: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", help="the connector, such as github")
    parser.add_argument(
        "--test-backend",
        action="store_true",
        help="run against the connector's certification backend (its fake on 127.0.0.1, "
        "postgres's throwaway cluster) instead of the vendor, with the fixture's credential",
    )
    parser.add_argument("--no-record", action="store_true", help="run, but record nothing")
    parser.add_argument(
        "--cassettes",
        type=Path,
        help="folder of the cassette (default: the package's tests/cassettes)",
    )
    parser.add_argument(
        "--data", type=Path, help="the journal's folder (default: a temporary one)"
    )
    args = parser.parse_args(argv)

    from reversi_core.connector import available_connectors, load_connector_class
    from reversi_core.errors import ConfigurationError
    from reversi_core.testing import (
        CassetteRejected,
        LiveScenario,
        MissingLiveVariables,
        NotApplicable,
        live_on_test_backend,
        load_fixture,
        record_live,
        resolve_variables,
        run_live,
    )

    if args.name not in available_connectors():
        installed = ", ".join(sorted(available_connectors())) or "none"
        return _fail(f"no connector named {args.name!r} is installed (installed: {installed})", 2)
    cls = load_connector_class(args.name)
    try:
        fixture = load_fixture(cls)
    except ConfigurationError as exc:
        return _fail(str(exc), 2)
    scenario = fixture.live
    if isinstance(scenario, NotApplicable):
        print(f"{args.name}: nothing live to run: {scenario.reason}")
        return 0
    if not isinstance(scenario, LiveScenario):
        return _fail(
            f"{args.name} declares no live scenario (live= on its CertificationFixture; "
            "docs/development.md, 'Live scenarios')",
            2,
        )
    record = scenario.record and not args.no_record
    folder = args.cassettes or ROOT / "packages" / f"reversi-connector-{args.name}" / "tests" / "cassettes"
    cassette = folder / f"{scenario.name}.yaml"
    if not args.test_backend:
        try:  # before anything is printed or made: name every variable that is missing
            resolve_variables(cls, scenario, os.environ)
        except MissingLiveVariables as exc:
            return _fail(str(exc), 2)
    where = "its test backend" if args.test_backend else "the backend its environment names"
    print(f"{args.name}: live scenario {scenario.name!r} against {where}: {scenario.summary}")
    data = args.data or Path(tempfile.mkdtemp(prefix=f"reversi-live-{args.name}-"))
    journal = data / "journal"  # where live_on_test_backend keeps it too

    def log(line: str) -> None:
        print(f"  {line}")

    outcome: Any
    try:
        if args.test_backend:
            if not record:  # the same scenario, with recording switched off
                fixture = dataclasses.replace(
                    fixture, live=dataclasses.replace(scenario, record=False)
                )
            outcome = asyncio.run(
                live_on_test_backend(cls, fixture, data, cassette=cassette, log=log)
            )
        elif record:
            outcome = asyncio.run(
                record_live(
                    cls, scenario, dict(os.environ), cassette, data_dir=journal, against="the vendor", log=log
                )
            )
        else:
            outcome = asyncio.run(run_live(cls, scenario, dict(os.environ), data_dir=journal, log=log))
    except ConfigurationError as exc:
        _discard(data, args.data)
        return _fail(str(exc), 2)
    except CassetteRejected as exc:  # the scenario itself passed and rolled back
        _discard(data, args.data)
        return _fail(str(exc), 1)
    except Exception as exc:
        return _fail(
            f"{args.name}: the live scenario failed: {type(exc).__name__}: {exc}\n"
            f"  its journal is kept in {journal} (reversi runs --data {journal})",
            1,
        )
    _discard(data, args.data)
    steps = f"{outcome.steps} calls in {', '.join(outcome.runs)}, rolled back"
    print(f"{args.name}: passed: {steps}")
    if outcome.cassette is not None:
        scrubbed = ", ".join(outcome.scrubbed) or "no credential"
        print(
            f"  recorded {outcome.exchanges} exchanges into {outcome.cassette}: free of every "
            f"form of {scrubbed}, and it replays"
        )
    elif scenario.record:
        print("  nothing recorded (--no-record)")
    else:
        print(f"  nothing to record: {args.name} does not speak HTTP")
    return 0


def _discard(data: Path, given: Path | None) -> None:
    """Remove the journal's temporary folder (never one the caller named)."""
    if given is None:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
