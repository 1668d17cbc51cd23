"""The contract every connector package's tests subclass, for the facts true of all of them.

::

    from reversi_core.testing import ConnectorContract
    from reversi_connector_github import GithubConnector

    class TestGithubContract(ConnectorContract):
        connector = GithubConnector

pytest collects the subclass (its name starts with ``Test``) and runs every
``test_*`` method below against the connector: it is found by its entry point, its
certification fixture too; its manifests form a registry; every input schema is closed;
every argument map produces exactly the compensation's arguments; every tool declares
its result; every tool says what it does and, for an HTTP connector, cites the vendor
page it follows; its fake's routes cite theirs; a missing credential is named and a
given one never shown; it declares its live scenario, which runs on the fixture's
backend (recorded, free of the credential and replayed, for an HTTP connector), and the
cassette it ships for it replays (``tests/cassettes/<scenario>.yaml``, beside the
subclass's module). A subclass that overrides or removes one of these tests must
say why in ``waived`` (``{"test_name": "the reason, in a sentence"}``); otherwise the
class cannot even be defined. The module imports nothing of pytest: it ships in the
``reversi-core`` wheel.
"""

from __future__ import annotations

import functools
import inspect
import tempfile
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

import anyio

from ..connector import ENTRY_POINT_GROUP, Connector, load_connector_class
from ..errors import ConfigurationError
from ..manifest import Effect, Manifest
from ..registry import Registry
from ._app import FakeApp
from ._cassettes import CASSETTE_DIR, live_on_test_backend, replay_cassette
from ._certification import (
    FIXTURE_GROUP,
    MIN_REASON_WORDS,
    CertificationFixture,
    NotApplicable,
    load_fixture,
)
from ._live import LiveScenario
from ._scrubbing import Secret, cassette_problems, credential_headers

__all__ = ["ConnectorContract"]


def _objects(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema inside ``schema`` (``$defs`` included), with where it is."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield where, schema
        for key, value in schema.items():
            if isinstance(value, dict | list):
                yield from _objects(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _objects(value, f"{where}[{index}]")


class ConnectorContract:
    """Generic facts about one connector (see the module docstring); subclass and set ``connector``."""

    connector: ClassVar[type[Connector]]
    """The connector class under test."""
    waived: ClassVar[Mapping[str, str]] = {}
    """Contract tests this package overrides or removes, each with its reason."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        standard = {n for n in vars(ConnectorContract) if n.startswith("test_")}
        for name in standard:
            if name in vars(cls) and vars(cls)[name] is not vars(ConnectorContract)[name]:
                reason = cls.waived.get(name, "")
                if len(reason.split()) < MIN_REASON_WORDS:
                    raise TypeError(
                        f"{cls.__name__} overrides or removes the contract test {name} without "
                        f"saying why: add waived = {{{name!r}: 'the reason, in a sentence'}}"
                    )
        unknown = sorted(set(cls.waived) - standard)
        if unknown:
            raise TypeError(
                f"{cls.__name__}.waived names tests the contract does not have: {unknown}"
            )

    # -- helpers ---------------------------------------------------------------------

    @property
    def manifests(self) -> dict[str, Manifest]:
        return {m.name: m for m in self.connector.manifests()}

    def fixture(self) -> CertificationFixture[Any]:
        return load_fixture(self.connector)

    # -- discovery -------------------------------------------------------------------

    def test_found_by_its_entry_point(self) -> None:
        """The ``reversi.connectors`` entry point named after the connector loads this class."""
        assert load_connector_class(self.connector.name) is self.connector
        names = [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)]
        assert names.count(self.connector.name) == 1, names

    def test_certification_fixture_found_by_its_entry_point(self) -> None:
        """The ``reversi.certification`` entry point of the connector gives its fixture."""
        found = [ep for ep in entry_points(group=FIXTURE_GROUP) if ep.name == self.connector.name]
        assert len(found) == 1, f"no {FIXTURE_GROUP} entry point named {self.connector.name}"
        assert isinstance(self.fixture(), CertificationFixture)

    # -- manifests -------------------------------------------------------------------

    def test_manifests_form_a_registry(self) -> None:
        """Every tool is ``<name>.<tool>`` and the manifests load as a registry."""
        manifests = self.connector.manifests()
        assert manifests, "a connector has tools"
        for manifest in manifests:
            assert manifest.connector == self.connector.name, manifest.name
        registry = Registry.from_manifests(manifests)
        assert sorted(m.name for m in registry) == sorted(m.name for m in manifests)

    def test_input_schemas_are_closed(self) -> None:
        """No input object accepts a field it does not declare (``additionalProperties: false``)."""
        for name, schema in self.connector.input_schemas().items():
            for where, obj in _objects(schema, name):
                if "properties" in obj:
                    assert obj.get("additionalProperties") is False, f"{where} is open"

    def test_argument_maps_are_exact(self) -> None:
        """Each compensation takes exactly the arguments its map produces, and is idempotent."""
        manifests = self.manifests
        for manifest in manifests.values():
            if manifest.effect in (Effect.REVERSIBLE, Effect.COMPENSABLE):
                assert manifest.compensation is not None, f"{manifest.name} has no compensation"
            if manifest.compensation is None:
                continue
            undo = manifests.get(manifest.compensation.tool)
            assert undo is not None, f"{manifest.name}: {manifest.compensation.tool} is not a tool"
            assert undo.effect is Effect.IDEMPOTENT, undo.name
            properties = set(undo.input_schema.get("properties", {}))
            required = set(undo.input_schema.get("required", []))
            mapped = set(manifest.compensation.argument_map)
            assert required <= mapped <= properties, (manifest.name, sorted(mapped))

    def test_every_tool_declares_its_result(self) -> None:
        """Every tool has an output schema (its result model), an object."""
        for manifest in self.manifests.values():
            assert manifest.output_schema is not None, f"{manifest.name} declares no result model"
            assert manifest.output_schema.get("type") == "object", manifest.name

    def test_every_tool_says_what_it_does(self) -> None:
        """A description for the agent, and for an HTTP connector the vendor page each follows."""
        from ..http import HttpConnector

        for full, spec in self.connector.tool_specs().items():
            assert spec.description.strip(), f"{full} has no description"
            if issubclass(self.connector, HttpConnector):
                assert "https://" in spec.doc, f"{full}: its docstring cites no vendor page"

    # -- configuration -----------------------------------------------------------------

    def test_a_missing_credential_is_named(self) -> None:
        """Without its credential variable, ``from_env`` fails naming the variable."""
        variable = self.connector.credential_env
        if variable is None:
            assert self.connector.from_env({}) is not None  # always enabled: builds bare
            return
        assert variable in self.connector.env_vars
        message = ""
        try:
            self.connector.from_env({})
        except ConfigurationError as exc:
            message = str(exc)
        assert message, f"from_env without {variable} built a connector"
        assert variable in message, message

    # -- the fake --------------------------------------------------------------------

    def test_fake_routes_cite_the_vendor_page(self) -> None:
        """Every route of the fake the fixture serves names the documentation page it follows."""
        fixture = self.fixture()
        with (
            tempfile.TemporaryDirectory(prefix="reversi-contract-") as directory,
            fixture.backend(Path(directory)) as handle,
        ):
            app = getattr(handle, "app", None)
            if not isinstance(app, FakeApp):
                return  # a real backend (a database, a directory): it has no routes to cite
            assert app.routes, "the fake serves no routes"
            for route in app.routes:
                cited = route.docs or ""
                assert cited.startswith("https://"), f"{route.method} {route.template} cites none"

    # -- the live scenario -------------------------------------------------------------

    def cassettes(self) -> Path:
        """The package's cassettes: ``cassettes/`` beside the module of this test class."""
        return Path(inspect.getfile(type(self))).resolve().parent / CASSETTE_DIR

    def test_declares_its_live_scenario(self) -> None:
        """A live scenario for ``nox -s live``, or the reason there is none; an HTTP one records."""
        from ..http import HttpConnector

        live = self.fixture().live
        assert live is not None, (
            f"{self.connector.name} declares no live scenario: set live= on its CertificationFixture "
            "(a LiveScenario, or NotApplicable saying why there is none; docs/development.md)"
        )
        if isinstance(live, NotApplicable):
            assert not issubclass(self.connector, HttpConnector), (
                f"{self.connector.name} is an HTTP connector: it has a vendor to run its live "
                f"scenario against (declared n/a: {live.reason})"
            )
            assert len(live.reason.split()) >= MIN_REASON_WORDS, live.reason
        else:
            assert live.record == issubclass(self.connector, HttpConnector), (
                "an HTTP connector's live scenario is recorded, and only an HTTP connector's is"
            )

    def test_live_scenario_runs_on_the_test_backend(self) -> None:
        """The scenario passes against the fixture's backend; an HTTP connector's recording of
        it holds no form of the fixture's credential, and replays."""
        fixture = self.fixture()
        live = fixture.live
        if not isinstance(live, LiveScenario):
            assert isinstance(live, NotApplicable), "no live scenario declared"
            return
        with tempfile.TemporaryDirectory(prefix="reversi-live-") as directory:
            outcome = anyio.run(
                functools.partial(
                    live_on_test_backend,
                    self.connector,
                    fixture,
                    Path(directory),
                    log=lambda _line: None,
                )
            )
            assert outcome.runs, "the scenario started no run"
            assert outcome.steps > 0, "the scenario made no call"
            if not live.record:
                assert outcome.cassette is None
                return
            assert outcome.cassette is not None
            assert outcome.cassette.is_file()
            assert outcome.exchanges, "nothing was recorded"
            if fixture.credential is not None:
                text = outcome.cassette.read_text(encoding="utf-8")
                assert fixture.credential not in text, "the fixture's credential is in the cassette"
                leaks = cassette_problems(
                    outcome.cassette, [Secret("the fixture's credential", fixture.credential)]
                )
                assert leaks == [], leaks

    def test_shipped_cassette_replays(self) -> None:
        """The cassette shipped for the live scenario replays: every request it holds is sent
        and matched, none other is; its credential headers hold placeholders only."""
        live = self.fixture().live
        folder = self.cassettes()
        if not (isinstance(live, LiveScenario) and live.record):
            shipped = sorted(p.name for p in folder.glob("*.yaml")) if folder.is_dir() else []
            assert shipped == [], f"a scenario that records nothing ships no cassette: {shipped}"
            return
        path = folder / f"{live.name}.yaml"
        assert path.is_file(), (
            f"{self.connector.name} ships no cassette {path}: record it with `nox -s live -- "
            f"{self.connector.name}` (the vendor) or `python scripts/live.py {self.connector.name} "
            "--test-backend` (its fake)"
        )
        report = anyio.run(replay_cassette, self.connector, live, path)
        assert report.exchanges > 0
        assert len(report.sent) == report.exchanges
        problems = cassette_problems(path, [], headers=credential_headers(self.connector))
        assert problems == [], problems
