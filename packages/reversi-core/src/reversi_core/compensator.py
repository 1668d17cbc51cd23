"""Running compensations in a separate process (``--compensator-cmd``).

:class:`CommandCompensator` starts the command once per compensation (split like a
shell line with :func:`shlex.split`, run without a shell), writes the
:class:`~reversi_core.connector.CompensationCall` as one JSON object on its stdin, and
reads the outcome: exit 0 means the undo succeeded (stdout may carry a JSON result);
any other exit means it failed, with the last line of stderr as the reason. A command
that runs past its time limit is killed and counts as failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Mapping
from typing import Any

from .connector import CompensationCall
from .errors import ConfigurationError, ToolError
from .redact import scrub

__all__ = ["DEFAULT_COMPENSATION_TIMEOUT", "CommandCompensator"]

DEFAULT_COMPENSATION_TIMEOUT = 120.0
"""Seconds one compensation command may run before it is killed and counted as failed."""


class CommandCompensator:
    """A compensator that runs an external command per call (see the module docstring).

    ``command`` is a shell-like string or an argument list; ``timeout`` is in seconds;
    ``env`` replaces the environment of the child (default: inherit).
    Raises :class:`ConfigurationError` for an empty command.
    """

    def __init__(
        self,
        command: str | list[str],
        *,
        timeout: float = DEFAULT_COMPENSATION_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ConfigurationError("--compensator-cmd is empty")
        self.argv = argv
        self.timeout = timeout
        self.env = dict(env) if env is not None else None

    async def __call__(self, call: CompensationCall) -> dict[str, Any]:
        """Run one compensation; return its JSON result (``{}`` if stdout is empty).

        Raises :class:`ToolError` with the command's last stderr line when it exits
        non-zero, cannot be started, or exceeds the time limit (the child is killed).
        A child that exits without reading its stdin is judged by its exit status alone.
        """
        payload = json.dumps(call.to_json()).encode()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
            )
        except OSError as exc:
            raise ToolError(
                f"cannot start compensator {self.argv[0]}: {exc.strerror}", code="spawn"
            ) from None
        try:
            # communicate() tolerates a child that closes stdin early (BrokenPipe).
            stdout, stderr = await asyncio.wait_for(proc.communicate(payload), self.timeout)
        except TimeoutError:
            await _kill(proc)
            raise ToolError(
                f"compensator {self.argv[0]} did not finish {call.tool} within {self.timeout} s",
                code="timeout",
            ) from None
        except BaseException:
            await _kill(proc)
            raise
        if proc.returncode != 0:
            lines = [ln for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
            reason = lines[-1] if lines else f"exit status {proc.returncode}, no message"
            raise ToolError(scrub(reason), code=f"exit_{proc.returncode}")
        out = stdout.decode(errors="replace").strip()
        if not out:
            return {}
        try:
            value = json.loads(out.splitlines()[-1])
        except json.JSONDecodeError:
            return {"output": scrub(out)}
        return value if isinstance(value, dict) else {"result": value}


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill a child that is still running and reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
