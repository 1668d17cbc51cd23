"""The audit export: a run as JSON Lines, for a SIEM or a ticket (``reversi export``).

:func:`export_records` yields, in order: one ``run`` record (the run, the result of
verifying its chain, and the chain's head hash, the anchor to keep elsewhere); one
``change`` record per record of the run's hash chain (each state change of each step,
with ``seq``, ``prev_hash`` and ``hash``); one ``step`` record per step (as it stands
now); one ``event`` record per entry of the run's audit trail.

Credentials are scrubbed from every record: the secrets registered in this process,
those of the environment (:func:`register_environment_secrets`: every variable whose name
says it holds a credential, such as ``GITHUB_TOKEN`` or ``STRIPE_API_KEY``), and any
JSON value under a key that names a credential (``password``, ``token``, ...). A
``change`` record whose content scrubbing altered says so (``"scrubbed": true``): its
``hash`` is that of the content as journaled, which the export does not reveal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from .journal import Journal
from .redact import REDACTED, _secret_name, register_secret, scrub_json

__all__ = ["export_records", "register_environment_secrets", "scrub_record"]

NOT_CREDENTIALS = frozenset({"PWD", "OLDPWD"})
"""Variables whose names match a credential's (``pwd``) but that the shell sets to a
working directory: registering one would hide that directory in every path printed or
journaled (a compensation's arguments too)."""


def register_environment_secrets(environ: Mapping[str, str] | None = None) -> int:
    """Register the value of every variable of ``environ`` (default: this process's)
    whose name names a credential (not :data:`NOT_CREDENTIALS`); returns how many were
    registered."""
    env = os.environ if environ is None else environ
    count = 0
    for name, value in env.items():
        if _secret_name(name) and value and name.upper() not in NOT_CREDENTIALS:
            register_secret(value)
            count += 1
    return count


def _by_key(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (REDACTED if _secret_name(str(k)) and v not in (None, "") else _by_key(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_by_key(v) for v in value]
    return value


def scrub_record(value: Any) -> Any:
    """``value`` with registered secrets and credential-named keys' values replaced."""
    return _by_key(scrub_json(value))


def export_records(journal: Journal, run_id: str) -> Iterator[dict[str, Any]]:
    """The run's records (see the module docstring), scrubbed. Raises
    :class:`~reversi_core.errors.JournalError` for an unknown run."""
    run = journal.get_run(run_id)
    verification = journal.verify_run(run_id)
    yield scrub_record({"type": "run", **run.to_json(), "chain": verification.to_json()})
    for rec in journal.run_chain(run_id):
        data = rec.to_json()
        content = data["content"]
        clean = scrub_record(content)
        data = scrub_record({k: v for k, v in data.items() if k != "content"})
        data["content"] = clean
        if json.dumps(clean, sort_keys=True) != json.dumps(content, sort_keys=True):
            data["scrubbed"] = True
        yield {"type": "change", **data}
    for step in journal.list_steps(run_id):
        yield {"type": "step", **scrub_record(step.to_json())}
    for event in journal.list_events(run_id):
        yield {"type": "event", "run_id": run_id, **scrub_record(event)}
