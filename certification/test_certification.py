"""The certification matrix, the guards that keep it honest, and the results-page drift test.

``test_check[<connector>-<check>]`` runs one check on one installed connector (conftest.py
builds the matrix from the ``reversi.connectors`` entry points). A check that does not
apply passes with its reason recorded; nothing here is ever skipped.

The guards fail the run when a check is removed, renamed or added without being listed
in ``reversi_core.testing.CHECKS``, when a not-applicable has no reason, when the
enforcement pointers printed by ``reversi-connectors certify`` are wrong, when any test
of the suite is skipped or expected to fail, and when a check has no self-test showing
it can fail. The last test compares docs/certification.md with the run's results.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from certification import checks, report, runner
from reversi_core.testing import (
    CHECK_INFO,
    CHECKS,
    SUITE_CHECKS_FILE,
    SUITE_TEST,
    CertificationFixture,
    NotApplicable,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# -- the matrix ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_check(
    connector: str,
    check: str,
    discovered: dict[str, runner.Loaded],
    outcomes: dict[tuple[str, str], runner.Outcome],
    tmp_path: Path,
) -> None:
    loaded = discovered[connector]
    outcome = await runner.run_check(
        check, loaded.subject(tmp_path), error=loaded.error, name=connector
    )
    outcomes[(connector, check)] = outcome
    if outcome.status == "fail":
        pytest.fail(f"{connector} fails {check}: {outcome.detail}", pytrace=False)
    assert outcome.status in ("pass", "not_applicable")
    assert outcome.detail.strip(), "every outcome carries a detail (a reason for n/a)"


# -- guards ----------------------------------------------------------------------------


def test_every_check_is_written_once_and_listed() -> None:
    written = {
        name: fn
        for name, fn in vars(checks).items()
        if name.startswith("check_") and inspect.iscoroutinefunction(fn)
    }
    assert sorted(written) == sorted(f"check_{c}" for c in CHECKS)
    assert list(CHECK_INFO) == list(CHECKS)
    assert len(set(CHECKS)) == 13
    for fn in written.values():
        assert fn.__module__ == "certification.checks"
        assert (fn.__doc__ or "").strip(), f"{fn.__name__} has no docstring"


def test_enforcement_pointers_are_true() -> None:
    tree = ast.parse((ROOT / SUITE_CHECKS_FILE).read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)}
    test_file, _, test_name = SUITE_TEST.partition("::")
    tests = ast.parse((ROOT / test_file).read_text(encoding="utf-8"))
    assert test_name in {n.name for n in tests.body if isinstance(n, ast.AsyncFunctionDef)}
    for check in CHECKS:
        function, test_id = CHECK_INFO[check].enforced_in("fs")
        path, _, name = function.partition("::")
        assert path == SUITE_CHECKS_FILE
        assert name in defined, f"{function} does not exist"
        assert test_id == f"{SUITE_TEST}[fs-{check}]"


def test_not_applicable_needs_a_reason(discovered: dict[str, runner.Loaded]) -> None:
    # the type: ignore lines below pass wrong types on purpose: the runtime checks are
    # what is under test, for fixtures written without a type checker
    for bad in ("", "   ", None):
        with pytest.raises(ValueError, match="reason"):
            NotApplicable(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a check"):
        CertificationFixture(
            backend=None,  # type: ignore[arg-type]
            build=None,  # type: ignore[arg-type]
            fingerprint=None,  # type: ignore[arg-type]
            examples={},
            not_applicable={"forward_sucess": "typo"},
        )
    with pytest.raises(ValueError, match="reason"):
        CertificationFixture(
            backend=None,  # type: ignore[arg-type]
            build=None,  # type: ignore[arg-type]
            fingerprint=None,  # type: ignore[arg-type]
            examples={},
            not_applicable={"retry": " "},
        )
    for name, loaded in discovered.items():
        assert loaded.fixture is not None, f"{name}: {loaded.error}"
        for check, why in loaded.fixture.not_applicable.items():
            assert check in CHECKS
            assert isinstance(why, NotApplicable), (name, check)
            assert why.reason.strip(), (name, check)


SILENCERS = re.compile(r"pytest\.(skip|xfail|importorskip)\b|mark\.(skip|skipif|xfail)\b")


def test_nothing_in_the_suite_is_skipped() -> None:
    offenders = []
    for path in sorted(HERE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SILENCERS.search(line) and "SILENCERS" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "a check may not be silenced; declare not_applicable with a reason"


def test_every_check_has_a_self_test_that_makes_it_fail() -> None:
    from certification.tests import test_selftest

    assert set(test_selftest.BROKEN) == set(CHECKS)
    for check, cases in test_selftest.BROKEN.items():
        assert cases, f"no broken connector shows {check} failing"


# -- the results page ------------------------------------------------------------------


@pytest.mark.anyio
async def test_results_table_is_current(
    request: pytest.FixtureRequest,
    discovered: dict[str, runner.Loaded],
    outcomes: dict[tuple[str, str], runner.Outcome],
    tmp_path: Path,
) -> None:
    """docs/certification.md shows what this run produced (checks not yet run are run here)."""
    results: dict[str, dict[str, dict[str, str]]] = {}
    for name, loaded in sorted(discovered.items()):
        for check in CHECKS:
            outcome = outcomes.get((name, check))
            if outcome is None:
                subject = loaded.subject(tmp_path / name / check)
                outcome = await runner.run_check(check, subject, error=loaded.error, name=name)
                outcomes[(name, check)] = outcome
            results.setdefault(name, {})[check] = outcome.to_json()
    residue = {name: runner.residue_of(loaded) for name, loaded in discovered.items()}
    committed = runner.DOC.read_text(encoding="utf-8") if runner.DOC.exists() else ""
    how = (
        f"{runner.DOC.relative_to(ROOT)} differs from this run's results; regenerate it with "
        f"`{report.REGENERATE}` (or `nox -s certify -- --write`) and commit it"
    )
    if request.config.getoption("connector"):
        lines = set(committed.splitlines())
        for name in results:
            missing = [
                ln
                for ln in report.connector_lines(name, results[name], residue.get(name, {}))
                if ln not in lines
            ]
            assert missing == [], how + f"; lines of {name} not on the page: {missing}"
        return
    expected = report.render(results, residue)
    assert committed == expected, how
