"""Running compensations, and replays, in a separate process (``--compensator-cmd``).

:class:`CommandCompensator` starts the command once per compensation (split like a
shell line with :func:`shlex.split`, run without a shell), writes the
:class:`~reversi_core.connector.CompensationCall` as one JSON object on its stdin, and
reads the outcome: exit 0 means the undo succeeded (stdout may carry a JSON result);
any other exit means it failed, with the last line of stderr as the reason. A command
that runs past its time limit is killed and counts as failed. Each command runs in a
session of its own, so that Ctrl-C on the terminal (which signals the foreground
process group) stops the rollback from starting more, but never kills one half done.

:class:`CommandReplayer` runs an uncertain step's replay the same way (the object on
stdin has the same fields: the step's forward call with its original key), and reads
three outcomes: exit 0, the call took effect and stdout holds its JSON result; exit
:data:`EXIT_NOT_APPLIED` (3), the vendor's answer shows it did not; any other exit, or
running out of time, leaves the outcome unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._childenv import child_environment
from .connector import CallContext, CompensationCall
from .errors import ConfigurationError, EffectUncertainError, ToolError
from .redact import scrub

__all__ = [
    "DEFAULT_COMPENSATION_TIMEOUT",
    "EXIT_NOT_APPLIED",
    "CommandCompensator",
    "CommandReplayer",
]

EXIT_NOT_APPLIED = 3
"""The exit status of a replay process whose answer shows the call did not take effect."""

DEFAULT_COMPENSATION_TIMEOUT = 120.0
"""Seconds one compensation command may run before it is killed and counted as failed."""


class _Command:
    """A command run once per call: ``command`` split like a shell line (or an argument
    list), run without a shell, within ``timeout`` seconds, with ``env`` as its whole
    environment when given, else this process's without ``$REVERSI_JOURNAL`` and
    ``$REVERSI_GATEWAY_TOKEN`` (:func:`~reversi_core._childenv.child_environment`: the
    journal's URL may carry its password). Raises :class:`ConfigurationError` for an
    empty command."""

    empty = "the command is empty"

    def __init__(
        self,
        command: str | list[str],
        *,
        timeout: float = DEFAULT_COMPENSATION_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ConfigurationError(self.empty)
        self.argv = argv
        self.timeout = timeout
        self.env = dict(env) if env is not None else None

    def environment(self) -> dict[str, str]:
        """The child's environment: ``env`` as given, else :func:`child_environment` (read
        at each call, as an inherited environment would be)."""
        return dict(self.env) if self.env is not None else child_environment()


class CommandCompensator(_Command):
    """A compensator that runs an external command per call (see the module docstring).

    ``command`` is a shell-like string or an argument list; ``timeout`` is in seconds;
    ``env`` replaces the environment of the child (default: this process's, without
    ``$REVERSI_JOURNAL`` and ``$REVERSI_GATEWAY_TOKEN``).
    Raises :class:`ConfigurationError` for an empty command.
    """

    empty = "--compensator-cmd is empty"

    async def __call__(self, call: CompensationCall) -> dict[str, Any]:
        """Run one compensation; return its JSON result (``{}`` if stdout is empty).

        Raises :class:`ToolError` with the command's last stderr line when it exits
        non-zero, cannot be started, or exceeds the time limit (the child is killed).
        A child that exits without reading its stdin is judged by its exit status alone.
        """
        code, stdout, reason = await _run_once(
            self.argv, _within(call, self.timeout), self.timeout, self.environment(), "compensator"
        )
        if code is None:
            raise ToolError(reason, code=stdout or "spawn")
        if code != 0:
            raise ToolError(reason, code=f"exit_{code}")
        if not stdout:
            return {}
        try:
            value = json.loads(stdout.splitlines()[-1])
        except json.JSONDecodeError:
            return {"output": scrub(stdout)}
        return value if isinstance(value, dict) else {"result": value}


class CommandReplayer(_Command):
    """An executor that replays an uncertain step through an external command.

    Given to :meth:`reversi_core.engine.Run.replay` as ``execute``: for each call it
    starts ``command`` (a shell-like string or an argument list, run without a shell),
    writes ``{"tool", "args", "idempotency_key", "run_id", "step"}`` on its stdin (the
    key being the step's own, from ``ctx``), and reads the outcome (module docstring).
    ``timeout`` is in seconds; ``env`` replaces the child's environment (default: this
    process's, without ``$REVERSI_JOURNAL`` and ``$REVERSI_GATEWAY_TOKEN``). Raises
    :class:`ConfigurationError` for an empty command.
    """

    empty = "the replay command is empty"

    async def __call__(self, tool: str, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """Replay one call; return its JSON result (the call took effect).

        Raises :class:`ToolError` with the command's last stderr line when it exits
        :data:`EXIT_NOT_APPLIED` (the call did not take effect), and
        :class:`EffectUncertainError` for every other failure (another exit status, a
        command that cannot be started or runs out of time, a result that is not one JSON
        object): the outcome is still unknown.
        """
        if not (ctx.idempotency_key and ctx.run_id and ctx.step is not None):
            raise EffectUncertainError(
                "a replay needs the step's run, number and key; nothing was sent"
            )
        call = CompensationCall(
            tool, args, ctx.idempotency_key, ctx.run_id, ctx.step, timeout=ctx.timeout
        )
        code, stdout, reason = await _run_once(
            self.argv,
            _within(call, self.timeout),
            self.timeout,
            self.environment(),
            "replay command",
        )
        if code == EXIT_NOT_APPLIED:
            raise ToolError(reason, code="not_applied")
        if code != 0:
            raise EffectUncertainError(reason)
        try:
            value = json.loads(stdout.splitlines()[-1]) if stdout else None
        except json.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise EffectUncertainError(
                f"the replay command {self.argv[0]} succeeded but printed no JSON object result"
            )
        return value


CHILD_SHARE = 0.8
"""The share of the command's time limit its tool is given (``"timeout"`` on its stdin):
the command needs the rest to start and to answer, so that its own requests give up, and
it says why, before it is killed."""


def _within(call: CompensationCall, limit: float) -> CompensationCall:
    """``call`` with a ``timeout`` the command can keep: the smaller of the call's own and
    :data:`CHILD_SHARE` of ``limit`` (the seconds before the command is killed)."""
    share = limit * CHILD_SHARE
    return replace(call, timeout=share if call.timeout is None else min(call.timeout, share))


async def _run_once(
    argv: list[str], call: CompensationCall, timeout: float, env: dict[str, str] | None, what: str
) -> tuple[int | None, str, str]:
    """Run ``argv`` once with ``call`` as JSON on stdin: ``(exit status, stdout, reason)``.

    ``reason`` is the last non-empty line of stderr (scrubbed). A command that cannot be
    started or runs past ``timeout`` gives ``(None, "spawn" or "timeout", reason)``; a
    timed-out child is killed.
    """
    payload = json.dumps(call.to_json()).encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            # a session of its own: Ctrl-C on the terminal signals the foreground process
            # group, and a call that is running must finish (or time out), not die half done
            start_new_session=True,
        )
    except OSError as exc:
        return None, "spawn", f"cannot start {what} {argv[0]}: {exc.strerror}"
    try:
        # communicate() tolerates a child that closes stdin early (BrokenPipe).
        stdout, stderr = await asyncio.wait_for(proc.communicate(payload), timeout)
    except TimeoutError:
        await _kill(proc)
        return None, "timeout", f"{what} {argv[0]} did not finish {call.tool} within {timeout} s"
    except BaseException:
        await _kill(proc)
        raise
    lines = [ln for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
    reason = lines[-1] if lines else f"exit status {proc.returncode}, no message"
    return proc.returncode, stdout.decode(errors="replace").strip(), scrub(reason)


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill a child that is still running and reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
