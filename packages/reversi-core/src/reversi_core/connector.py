"""The connector protocol, entry-point discovery, and the in-process compensator.

A connector is a subclass of :class:`Connector` whose async methods are marked with
:func:`tool`. Each marked method takes the validated pydantic input model and a
:class:`CallContext`, and returns a JSON object (``dict``). The class attributes say
what the connector is called and which environment variable enables it::

    class FsConnector(Connector):
        name = "fs"
        credential_env = None            # always enabled

        @tool(effect=Effect.REVERSIBLE, permission="fs:write", input=WriteFileArgs,
              output=WriteFileResult,
              compensation=Compensation(tool="fs.restore_file", argument_map={...}))
        async def write_file(self, args: WriteFileArgs, ctx: CallContext) -> dict[str, Any]:
            ...

The result is a plain ``dict``; ``output`` is the pydantic model that describes it
(the manifest's ``output_schema``), which :meth:`Connector.call` checks it against.

Connectors are found only through the ``reversi.connectors`` entry-point group, whose
entry names are the connector tokens and whose values are the classes
(``fs = "reversi_connector_fs:FsConnector"``). Core never imports a connector.

What a call carries (:class:`CallContext`, :class:`CompensationCall`) is defined in
``_calls.py`` and imported from here.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from ._calls import CallContext, CompensationCall, Compensator
from .errors import (
    ConfigurationError,
    ConnectorNotFoundError,
    EffectUncertainError,
    InvalidArgumentsError,
    ReversiError,
    ToolError,
    UnknownToolError,
)
from .journal import step_idempotency_key
from .manifest import Approval, Compensation, Effect, Manifest, Replay, Requirement
from .redact import scrub
from .registry import Registry, schema_hash

__all__ = [
    "ENTRY_POINT_GROUP",
    "CallContext",
    "CliOption",
    "CompensationCall",
    "Compensator",
    "Connector",
    "ToolSpec",
    "all_connectors",
    "available_connectors",
    "compensator_for",
    "connector_schema_hashes",
    "enabled_from_env",
    "executor_for",
    "load_connector_class",
    "registry_for",
    "replayer_for",
    "tool",
]

ENTRY_POINT_GROUP = "reversi.connectors"

F = TypeVar("F", bound=Callable[..., Awaitable[dict[str, Any]]])


@dataclass(frozen=True)
class CliOption:
    """A command-line option a connector takes in ``reversi-connectors serve`` and ``compensate``.

    ``flag`` is the option as typed (``--root``), ``option`` the keyword it is passed to
    :meth:`Connector.from_env` as (``root``), ``metavar`` and ``help`` what ``--help``
    shows. Never a credential: those come from the environment only (a flag whose name
    looks like one is refused by the CLI).
    """

    flag: str
    option: str
    help: str
    metavar: str = "VALUE"

    def __post_init__(self) -> None:
        if not self.flag.startswith("--") or not self.option.isidentifier():
            raise ValueError(f"CliOption {self.flag!r}: a --flag and an identifier option")


@dataclass(frozen=True)
class ToolSpec:
    """The declaration :func:`tool` attaches to a connector method."""

    method: str
    effect: Effect
    permission: str
    input: type[BaseModel]
    output: type[BaseModel]
    description: str
    compensation: Compensation | None = None
    approval: Approval = Approval.NEVER
    requires: tuple[Requirement, ...] = ()
    replay: Replay | None = None
    doc: str = ""
    """The tool's whole docstring (the description is its first paragraph)."""


def tool(
    *,
    effect: Effect,
    permission: str,
    input: type[BaseModel],
    output: type[BaseModel],
    compensation: Compensation | None = None,
    approval: Approval | None = None,
    requires: Iterable[Requirement] = (),
    replay: Replay | None = None,
    description: str | None = None,
) -> Callable[[F], F]:
    """Mark a connector method as a tool (see the module docstring).

    ``input`` is the pydantic model of the arguments and ``output`` the pydantic model of
    the result: the manifest's ``input_schema`` and ``output_schema`` are their JSON
    Schemas, the registry checks every ``result.`` source of an argument map or a
    ``requires`` declaration against ``output``, and :meth:`Connector.call` checks every
    result against it. Declare every field the tool returns (a model with
    ``extra="forbid"`` for a result whose keys are fixed). The tool's name is
    ``<connector>.<method name>``; its description defaults to the first paragraph of
    the method's docstring. ``approval`` defaults to ``always`` for irreversible tools
    and ``never`` otherwise. ``replay`` declares that the vendor honours the call's
    idempotency key, so that an uncertain call can be sent again with it
    (:class:`~reversi_core.manifest.Replay`).
    """

    def mark(func: F) -> F:
        full = inspect.cleandoc(func.__doc__ or "")
        doc = full.split("\n\n")[0]
        spec = ToolSpec(
            method=func.__name__,
            effect=effect,
            permission=permission,
            input=input,
            output=output,
            description=description if description is not None else " ".join(doc.split()),
            compensation=compensation,
            approval=approval
            if approval is not None
            else (Approval.ALWAYS if effect is Effect.IRREVERSIBLE else Approval.NEVER),
            requires=tuple(requires),
            replay=replay,
            doc=full,
        )
        func.__reversi_tool__ = spec  # type: ignore[attr-defined]
        return func

    return mark


class Connector:
    """Base class of every connector (see the module docstring).

    Subclasses set ``name`` (the connector token), ``credential_env`` (the main
    credential variable, or ``None`` when always enabled) and, optionally,
    ``env_vars`` (every variable it reads, for the docs) and ``open_world`` (``False``
    when the tools touch only a closed, local domain such as a directory tree; served
    over MCP as the tools' ``openWorldHint``) and ``cli_options`` (the
    :class:`CliOption`\\ s it takes on the command line, such as fs's ``--root``), and
    implement :meth:`from_env`.
    """

    name: ClassVar[str]
    credential_env: ClassVar[str | None] = None
    env_vars: ClassVar[tuple[str, ...]] = ()
    open_world: ClassVar[bool] = True
    cli_options: ClassVar[tuple[CliOption, ...]] = ()
    _tools: ClassVar[dict[str, ToolSpec]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                spec = getattr(value, "__reversi_tool__", None)
                if isinstance(spec, ToolSpec):
                    tools[attr] = spec
        cls._tools = tools

    # -- declarations --------------------------------------------------------------

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        """``{full tool name: ToolSpec}``."""
        return {f"{cls.name}.{method}": spec for method, spec in cls._tools.items()}

    @classmethod
    def manifests(cls) -> list[Manifest]:
        """The manifests of every tool, sorted by name; needs no configuration or credential."""
        out = []
        for full, spec in sorted(cls.tool_specs().items()):
            out.append(
                Manifest(
                    name=full,
                    description=spec.description,
                    effect=spec.effect,
                    permission=spec.permission,
                    approval=spec.approval,
                    compensation=spec.compensation,
                    requires=list(spec.requires),
                    replay=spec.replay,
                    input_schema=spec.input.model_json_schema(),
                    output_schema=spec.output.model_json_schema(),
                )
            )
        return out

    @classmethod
    def input_schemas(cls) -> dict[str, dict[str, Any]]:
        """``{full tool name: JSON Schema of its input model}``."""
        return {full: spec.input.model_json_schema() for full, spec in cls.tool_specs().items()}

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **options: Any) -> Connector:
        """Build the connector from environment variables plus CLI ``options`` (such as ``root``).

        Raises :class:`ConfigurationError` naming the missing variable or bad option.
        """
        raise NotImplementedError

    # -- calling -------------------------------------------------------------------

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
    ) -> dict[str, Any]:
        """Validate ``args`` with the tool's input model, run the tool, check its result.

        Returns the tool's JSON result, as the tool returned it, once its output model
        accepts it in strict mode (no conversion: an integer field takes no ``"3"`` and
        no ``true``; a closed model takes no extra key), so the result is what the
        manifest's ``output_schema`` describes. Raises :class:`UnknownToolError`,
        :class:`InvalidArgumentsError` (one problem per field), :class:`ToolError` for a
        definite failure, or :class:`EffectUncertainError`. Any other exception from the
        tool becomes ``EffectUncertainError`` for a writing tool and ``ToolError`` for a
        read-only one, with credentials scrubbed from the message.

        A result that is not a JSON object, or that its output model refuses, is a
        ``ToolError`` (code ``bad_result``) from a read-only tool. From any other tool it
        is ``EffectUncertainError``: the tool returned, so its write was accepted, but
        the result cannot describe it, and a compensation computed from it could undo the
        wrong thing. Either message names each refused field (``result.sha: Field
        required``), never its value.
        """
        prefix, _, method = name.partition(".")
        spec = self._tools.get(method) if prefix == self.name else None
        if spec is None:
            raise UnknownToolError(f"unknown tool {name!r} for connector {self.name!r}")
        try:
            model = spec.input.model_validate(dict(args))
        except ValidationError as exc:
            problems = [
                f"args.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                if err["loc"]
                else f"args: {err['msg']}"
                for err in exc.errors()
            ]
            raise InvalidArgumentsError(
                f"invalid arguments for {name}: " + "; ".join(problems), problems=problems
            ) from None
        func = getattr(self, method)
        try:
            result = await func(model, ctx or CallContext())
        except (ReversiError, ConfigurationError):
            raise
        except Exception as exc:  # a bug or an unmapped backend error: never lose uncertainty
            text = scrub(f"{type(exc).__name__}: {exc}")
            if spec.effect is Effect.READ_ONLY:
                raise ToolError(f"{name} failed: {text}", code="unexpected") from None
            raise EffectUncertainError(
                f"{name} raised unexpectedly, outcome unknown: {text}"
            ) from None
        return _checked_result(name, spec, result)

    async def aclose(self) -> None:
        """Release network clients and other resources. Safe to call twice."""
        return None

    def prune_backups(
        self, needed: Collection[str], before: float, *, dry_run: bool = False
    ) -> list[str] | None:
        """Retention's hook (``reversi prune``, docs/operate.md): remove the backups this
        connector keeps on its own (fs's backup directory) that no kept step needs.

        ``needed`` holds every string the results and compensations of the steps still
        in the journal hold (a backup named there is never removed); ``before`` is a UNIX
        time in seconds: only backups made earlier may go, so that a call not journaled
        yet keeps its backup. With ``dry_run`` nothing is removed. Returns the names
        removed (or that would be); ``None`` (this default) for a connector that keeps no
        backups of its own, or whose backups live in the vendor's storage under lifecycle
        rules (the object stores' ``.reversi-backups/``).
        """
        return None


def _checked_result(name: str, spec: ToolSpec, result: Any) -> dict[str, Any]:
    """``result``, once it is a JSON object its output model accepts in strict mode.

    See :meth:`Connector.call` for the error; the model's validator is compiled once, with
    the class, so the check costs a few microseconds (docs/performance.md).
    """
    if not isinstance(result, dict):
        raise _bad_result(name, spec, f"a {type(result).__name__}, not a JSON object")
    try:
        spec.output.__pydantic_validator__.validate_python(result, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"result{''.join(f'.{part}' for part in err['loc'])}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        )
        raise _bad_result(
            name,
            spec,
            scrub(f"a result its output model {spec.output.__name__} refuses ({problems})"),
        ) from None
    return result


def _bad_result(name: str, spec: ToolSpec, what: str) -> ToolError | EffectUncertainError:
    """The error for a tool that returned ``what`` (see :meth:`Connector.call`)."""
    if spec.effect is Effect.READ_ONLY:
        return ToolError(f"{name} returned {what}", code="bad_result")
    return EffectUncertainError(
        f"{name} returned {what}: its write was accepted, but the result cannot describe it, "
        "so it cannot be undone automatically; check the backend"
    )


# -- discovery ---------------------------------------------------------------------


def available_connectors() -> dict[str, str]:
    """``{token: "module:Class"}`` for every installed connector (entry points only)."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_connector_class(name: str) -> type[Connector]:
    """Import the connector class registered under ``name``.

    Raises :class:`ConnectorNotFoundError` listing what is installed.
    """
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Connector)):
                raise ConfigurationError(
                    f"entry point {ep.value} for {name!r} is not a Connector class"
                )
            return cls
    installed = ", ".join(sorted(available_connectors())) or "none"
    raise ConnectorNotFoundError(f"unknown connector {name!r} (installed: {installed})")


def enabled_from_env(environ: Mapping[str, str] | None = None, **options: Any) -> list[Connector]:
    """Every installed connector whose main credential variable is set (fs-like ones always).

    ``options`` (such as ``root`` and ``backup_dir``) are passed to each connector's
    :meth:`Connector.from_env` that accepts them.
    """
    env = os.environ if environ is None else environ
    out = []
    for name in sorted(available_connectors()):
        cls = load_connector_class(name)
        if cls.credential_env is None or env.get(cls.credential_env):
            out.append(cls.from_env(env, **options))
    return out


def all_connectors(**configs: Mapping[str, Any]) -> list[Connector]:
    """Build connectors by token from explicit configs: ``all_connectors(fs={"root": "."})``.

    Each config is passed as keyword arguments to the connector's constructor.
    Raises :class:`ConnectorNotFoundError` for an unknown token.
    """
    return [load_connector_class(name)(**dict(config)) for name, config in configs.items()]


def registry_for(connectors: Iterable[Connector | type[Connector]]) -> Registry:
    """A validated :class:`Registry` of every tool of ``connectors``."""
    return Registry.from_manifests(m for c in connectors for m in c.manifests())


def connector_schema_hashes(connector: Connector | type[Connector]) -> dict[str, str]:
    """``{tool: SHA-256 of its input schema as canonical JSON}``; store it as a drift baseline."""
    return {name: schema_hash(schema) for name, schema in connector.input_schemas().items()}


def compensator_for(connectors: Iterable[Connector]) -> Compensator:
    """An in-process :data:`Compensator` that dispatches each call to its connector.

    The call's idempotency key, its ``overwrite`` and its ``timeout`` reach the tool in
    :class:`CallContext`. A tool of a connector that is not in ``connectors`` fails with
    :class:`ConfigurationError` naming the connector (its credential is probably not
    set); a tool that is not idempotent (so cannot be a compensation) fails with
    :class:`InvalidArgumentsError`.
    """
    by_name = {c.name: c for c in connectors}

    async def compensate(call: CompensationCall) -> dict[str, Any]:
        prefix = call.tool.split(".", 1)[0]
        connector = by_name.get(prefix)
        if connector is None:
            raise ConfigurationError(_not_enabled(call.tool, prefix))
        spec = connector.tool_specs().get(call.tool)
        if spec is not None and spec.effect is not Effect.IDEMPOTENT:
            raise InvalidArgumentsError(
                f"{call.tool} is not a compensation: its effect is {spec.effect.value}, and only "
                "idempotent tools run as compensations"
            )
        ctx = CallContext(
            run_id=call.run_id,
            step=call.step,
            idempotency_key=call.idempotency_key,
            compensation=True,
            overwrite=call.overwrite,
            timeout=call.timeout,
        )
        return await connector.call(call.tool, call.args, ctx)

    return compensate


def replayer_for(connectors: Iterable[Connector]) -> Compensator:
    """An in-process replayer: runs an uncertain step's forward call again, as a replay.

    Takes the same object as a compensation (:class:`CompensationCall`: the step's tool,
    its journaled args, its key, run and step) and accepts it only as a replay: the tool
    must declare :class:`~reversi_core.manifest.Replay` (its vendor honours the key) and
    the key must be the step's original one, ``reversi-<run>-<step>``, and ``overwrite``
    false (it is a compensation's, never a forward call's). The tool then runs
    with ``CallContext(replay=True)`` and that key. Raises
    :class:`ConfigurationError` for a connector that is not enabled,
    :class:`UnknownToolError`, :class:`InvalidArgumentsError` for a tool that cannot be
    replayed or a key that is not the step's, or whatever the tool raises
    (``ToolError``: the call did not take effect; ``EffectUncertainError``: still unknown).
    See docs/engine.md (RES-3).
    """
    by_name = {c.name: c for c in connectors}

    async def replay(call: CompensationCall) -> dict[str, Any]:
        prefix = call.tool.split(".", 1)[0]
        connector = by_name.get(prefix)
        if connector is None:
            raise ConfigurationError(_not_enabled(call.tool, prefix))
        spec = connector.tool_specs().get(call.tool)
        if spec is None:
            raise UnknownToolError(f"unknown tool {call.tool!r} for connector {prefix!r}")
        if spec.replay is None:
            raise InvalidArgumentsError(
                f"{call.tool} cannot be replayed: its manifest does not declare that the vendor "
                "honours its idempotency key, so a second call could act twice"
            )
        if call.overwrite:
            raise InvalidArgumentsError(
                f"a replay of step {call.step} of {call.run_id} re-sends its forward call, which "
                "nothing may mark overwrite: that applies to a compensation only"
            )
        original = step_idempotency_key(call.run_id, call.step)
        if call.idempotency_key != original:
            raise InvalidArgumentsError(
                f"a replay of step {call.step} of {call.run_id} must carry the step's own "
                f"idempotency key {original!r}, not another: with another key the vendor "
                "would carry the call out again"
            )
        ctx = CallContext(
            run_id=call.run_id,
            step=call.step,
            idempotency_key=call.idempotency_key,
            replay=True,
            timeout=call.timeout,
        )
        return await connector.call(call.tool, call.args, ctx)

    return replay


def _not_enabled(tool: str, prefix: str) -> str:
    """Why no connector runs ``tool``, naming the variable that would enable it."""
    if prefix not in available_connectors():
        installed = ", ".join(sorted(available_connectors())) or "none"
        return f"no connector named {prefix!r} is installed for {tool} (installed: {installed})"
    variable = load_connector_class(prefix).credential_env
    if variable is None:
        return f"the {prefix} connector could not be enabled for {tool}"
    return f"{tool}: {variable} is not set; the {prefix} connector is enabled only when it is"


def executor_for(
    connectors: Iterable[Connector],
) -> Callable[[str, dict[str, Any], CallContext], Awaitable[dict[str, Any]]]:
    """An executor for :meth:`reversi_core.engine.Run.call` that dispatches by tool prefix."""
    by_name = {c.name: c for c in connectors}

    async def execute(tool_name: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        connector = by_name.get(tool_name.split(".", 1)[0])
        if connector is None:
            raise UnknownToolError(f"no enabled connector for {tool_name}")
        return await connector.call(tool_name, args, ctx)

    return execute
