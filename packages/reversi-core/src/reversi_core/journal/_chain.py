"""The tamper-evident journal: each run's hash chain of step records, shared by both stores.

Every write that changes a step (its intent, its outcome, a recovery, a resolution, a
rollback state, an overwrite decision) appends, in the same transaction, one record to
the run's chain (table ``chain``): ``(run_id, seq, step, kind, content, prev_hash,
hash)``. ``seq`` counts the run's records from 1 with no gap; ``content`` is a JSON
object holding the step's fields as that write set them, spelled as the journal stored
them (scrubbed of secrets); ``prev_hash`` is the previous record's ``hash`` (``""`` for
the first) and::

    hash = sha256(prev_hash "|" seq "|" step "|" kind "|" content)   # UTF-8, hex digest

The SQLite journal computes it here (:func:`link_hash`) and stores the chain as
``_sqlite_chain.py`` tells; the PostgreSQL journal computes the same bytes in its
statements with ``sha256()`` (``_pg_sql.py``), where the run's row keeps the chain's head
(``chain_seq``, ``chain_hash``).

:func:`verify_chain` recomputes a run's chain, then folds each step's records (each
record's ``content`` updates the step's fields, in order) and compares the result with
the step's row as the journal holds it now: a row edited behind the journal's back, a
record edited, removed or inserted, all show as the first record that does not match.
What the chain cannot show alone is a run whose chain *and* rows were rewritten together
from some record on: keep the head hash elsewhere (``reversi export`` writes it) to
anchor it. Runs written before the chain's migration have no records: they verify as
"not chained".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._json import dumps_text
from ..errors import JournalCorruptError
from ._base import StepRecord, step_idempotency_key

__all__ = [
    "CHAIN_SCHEMA",
    "STEP_FIELDS",
    "ChainRecord",
    "Verification",
    "content",
    "corrupt_verdict",
    "link_hash",
    "verify_chain",
]

CHAIN_MARK = "CREATE TABLE chain"
"""What the chain's migration holds: its schema version is found by it (see :data:`CHAIN_SCHEMA`)."""


def _chain_schema() -> int:
    from ._schema import MIGRATIONS

    for number, text in enumerate(MIGRATIONS, start=1):
        if CHAIN_MARK in text:
            return number
    raise AssertionError("no chain migration")  # pragma: no cover - caught by every test


CHAIN_SCHEMA = _chain_schema()
"""The schema version that brought the chain; runs written before it are not chained."""

STEP_FIELDS = (
    "tool",
    "effect",
    "permission",
    "args",
    "reason",
    "state",
    "idempotency_key",
    "owner",
    "started_at",
    "finished_at",
    "result",
    "error",
    "compensation",
    "compensation_error",
    "approval",
    "resolution",
    "resolved_by",
    "rollback_state",
    "rollback_reason",
    "overwrite",
    "requires",
)
"""The fields of a step the chain covers (every column of its row and its edges)."""


_FRAGMENT = getattr(orjson, "Fragment", None)
"""``orjson.Fragment`` (orjson 3.9.11 and later): JSON text put in a document as it is."""


def content(plain: Mapping[str, Any], encoded: Mapping[str, str | None] | None = None) -> str:
    """A record's ``content``: a JSON object of ``plain`` values and of ``encoded`` ones.

    ``encoded`` values are JSON texts as the journal stored them (``args``, ``result``,
    ...; ``None`` is ``null``), put in as they are rather than encoded again (``orjson.Fragment``),
    which keeps the cost of a record to one call of orjson. Keys are sorted.
    """
    if _FRAGMENT is not None:
        body: dict[str, Any] = dict(plain)
        if encoded:
            for k, v in encoded.items():
                body[k] = None if v is None else _FRAGMENT(v)
        try:  # one call of orjson, the stored JSON texts put in as they are
            return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except TypeError:  # a lone surrogate in a plain value: spelled in ASCII, as stored
            pass
    parts = {k: dumps_text(v) for k, v in plain.items()}
    if encoded:
        for k, v in encoded.items():
            parts[k] = "null" if v is None else v
    return "{" + ",".join(f'"{k}":{parts[k]}' for k in sorted(parts)) + "}"


def link_hash(prev: str, seq: int, step: int | None, kind: str, text: str) -> str:
    """The record's hash (see the module docstring): a 64-character hex SHA-256."""
    material = f"{prev}|{seq}|{'' if step is None else step}|{kind}|{text}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ChainRecord:
    """One record of a run's chain, as stored."""

    run_id: str
    seq: int
    step: int | None
    kind: str
    content: str
    prev_hash: str
    hash: str
    linked: bool = False
    """A link of a step's row (SQLite, schema 5): its ``content`` computed from the row,
    its ``prev_hash`` the previous record's hash (``_sqlite_chain.py``); not exported."""

    def to_json(self) -> dict[str, Any]:
        """``{"run_id", "seq", "step", "kind", "content", "prev_hash", "hash"}``; ``content`` parsed."""
        try:
            body: Any = json.loads(self.content)
        except ValueError:
            body = self.content
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "step": self.step,
            "kind": self.kind,
            "content": body,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


CHAIN_COLUMNS = "run_id, seq, step, kind, content, prev_hash, hash"


@dataclass(frozen=True)
class Verification:
    """What :func:`verify_chain` found for one run.

    ``status``: ``"ok"`` (every record and every step row matches), ``"tampered"`` (the
    first mismatch is ``seq``, ``step`` and ``what``; ``seq`` is ``None`` when no record
    is to blame, such as a step row with no record) or ``"unchained"`` (written before
    schema :data:`CHAIN_SCHEMA`). ``records`` is the number of records, ``head`` the last
    record's hash (or ``None``).
    """

    run_id: str
    status: str
    records: int = 0
    head: str | None = None
    seq: int | None = None
    step: int | None = None
    what: str | None = None
    steps: int = 0

    @property
    def ok(self) -> bool:
        """True unless tampered (a run not chained is not evidence of tampering)."""
        return self.status != "tampered"

    def describe(self) -> str:
        """One line for a person."""
        if self.status == "unchained":
            return f"run {self.run_id}: not chained (written before schema {CHAIN_SCHEMA})"
        if self.status == "ok":
            return f"run {self.run_id}: ok ({self.records} records, {self.steps} steps, head {self.head})"
        where = f"record {self.seq}" if self.seq is not None else "no record"
        step = f", step {self.step}" if self.step is not None else ""
        return f"run {self.run_id}: TAMPERED at {where}{step}: {self.what}"

    def to_json(self) -> dict[str, Any]:
        """Every field, as JSON data."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "records": self.records,
            "steps": self.steps,
            "head": self.head,
            "seq": self.seq,
            "step": self.step,
            "what": self.what,
            "message": self.describe(),
        }


def _step_fields(step: StepRecord) -> dict[str, Any]:
    data = {name: getattr(step, name) for name in STEP_FIELDS}
    data["state"] = step.state.value
    data["rollback_state"] = step.rollback_state.value if step.rollback_state else None
    return data


def _base(run_id: str, seq: int) -> dict[str, Any]:
    fields: dict[str, Any] = dict.fromkeys(STEP_FIELDS)
    fields["requires"] = []
    fields["idempotency_key"] = step_idempotency_key(run_id, seq)
    return fields


@dataclass
class _Fold:
    fields: dict[str, Any]
    last: int  # seq of its latest record
    kinds: list[str] = field(default_factory=list)
    set_by: dict[str, tuple[int, str]] = field(default_factory=dict)  # field: (seq, kind)


def _tampered(
    run_id: str, n: int, head: str | None, seq: int | None, step: int | None, what: str
) -> Verification:
    return Verification(run_id, "tampered", records=n, head=head, seq=seq, step=step, what=what)


def _head_mismatch(head: tuple[int, str], n: int, last: str) -> str:
    """What differs between the head the run's row keeps and the chain's last record."""
    if head[0] == n:
        return (
            f"the run's chain head names record {n} with a hash other than that record's "
            "(the head or the record was edited)"
        )
    removed = " (records were removed from its end)" if head[0] > n else ""
    return f"the run's chain head names record {head[0]}, the chain ends at record {n}{removed}"


def corrupt_verdict(
    run_id: str, records: Sequence[ChainRecord], exc: JournalCorruptError
) -> Verification:
    """The verdict on a run one of whose step rows holds what no write stores (a state no
    step can be in, arguments that are not JSON): tampered, at that step."""
    return _tampered(
        run_id, len(records), None, None, exc.seq, f"the step's row cannot be read back: {exc}"
    )


def verify_chain(
    run_id: str,
    chained: bool,
    records: Sequence[ChainRecord],
    steps: Iterable[StepRecord],
    head: tuple[int, str] | None = None,
    late: str | None = None,
) -> Verification:
    """Check one run: its chain (dense ``seq``, ``prev_hash`` links, each ``hash``), then
    each step's row against the fold of its records (see the module docstring).

    ``chained`` is false for a run written before the chain's schema; ``head`` is the
    chain's head as the run's row keeps it (``(seq, hash)``, PostgreSQL), or ``None``.
    ``late``: for a run marked as written before the chain, why the journal knows it was
    made after the chain's migration (its store's check), or ``None``.
    Returns the :class:`Verification`; raises nothing.
    """
    step_list = list(steps)
    if not chained and late is not None:
        return _tampered(
            run_id, len(records), None, None, None,
            f"the run is marked as written before the chain, yet {late} (unchained behind "
            "the journal)",
        )  # fmt: skip
    if not chained:
        if records:
            first = records[0]
            return _tampered(
                run_id,
                len(records),
                None,
                first.seq,
                first.step,
                "the run is marked as written before the chain, yet has chain records",
            )
        return Verification(run_id, "unchained", steps=len(step_list))
    prev = ""
    folds: dict[int, _Fold] = {}
    last_head: str | None = None
    for expected, rec in enumerate(records, start=1):
        if rec.seq != expected:
            return _tampered(
                run_id,
                len(records),
                last_head,
                expected,
                None,
                f"record {expected} is missing (the next one stored is {rec.seq})",
            )
        if rec.prev_hash != prev:
            return _tampered(
                run_id,
                len(records),
                last_head,
                rec.seq,
                rec.step,
                "its prev_hash is not the previous record's hash",
            )
        if link_hash(prev, rec.seq, rec.step, rec.kind, rec.content) != rec.hash:
            return _tampered(
                run_id,
                len(records),
                last_head,
                rec.seq,
                rec.step,
                f"the step's row no longer matches its {rec.kind} record (a field that record "
                "holds, or its link, was edited)"
                if rec.linked
                else "its hash does not match its content (the record was edited)",
            )
        prev = last_head = rec.hash
        if rec.step is None:
            continue
        try:
            body = json.loads(rec.content)
        except ValueError:
            return _tampered(
                run_id, len(records), last_head, rec.seq, rec.step, "its content is not JSON"
            )
        fold = folds.get(rec.step)
        if fold is None:
            fold = folds[rec.step] = _Fold(_base(run_id, rec.step), rec.seq)
        fold.fields.update(body)
        fold.set_by.update(dict.fromkeys(body, (rec.seq, rec.kind)))
        fold.last = rec.seq
        fold.kinds.append(rec.kind)
    n = len(records)
    if head is not None and head != (n, last_head or ""):
        return _tampered(
            run_id,
            n,
            last_head,
            head[0],
            None,
            _head_mismatch(head, n, last_head or ""),
        )
    rows = {s.seq: s for s in step_list}
    for seq in sorted(set(rows) | set(folds)):
        fold = folds.get(seq)
        row = rows.get(seq)
        if fold is None:
            what = "the step has no record in the chain (a row inserted behind the journal)"
            return _tampered(run_id, n, last_head, None, seq, what)
        if row is None:
            what = "the step's row is gone (deleted behind the journal)"
            return _tampered(run_id, n, last_head, fold.last, seq, what)
        now = _step_fields(row)
        for name in STEP_FIELDS:
            if now[name] != fold.fields[name]:
                at, kind = fold.set_by.get(name, (fold.last, fold.kinds[-1]))
                return _tampered(
                    run_id,
                    n,
                    last_head,
                    at,
                    seq,
                    f"the step's {name} differs from record {at} ({kind}), the latest that "
                    "sets it",
                )
    return Verification(run_id, "ok", records=n, head=last_head, steps=len(step_list))


# -- the content of each kind of record (values as the journal binds them) -------------


def begin_content(
    tool: str,
    effect: str,
    permission: str,
    args: str | None,
    reason: str | None,
    owner: str,
    now: float,
    approval: str | None,
    requires: list[int],
) -> str:
    """``begin``: a pending step, its intent (``args``, ``approval``: stored JSON text)."""
    return content(
        {
            "tool": tool,
            "effect": effect,
            "permission": permission,
            "reason": reason,
            "state": "pending",
            "owner": owner,
            "started_at": now,
            "requires": requires,
        },
        {"args": args, "approval": approval},
    )


def rejected_content(
    tool: str,
    effect: str,
    permission: str,
    args: str | None,
    reason: str | None,
    now: float,
    error: str | None,
    approval: str | None,
) -> str:
    """``rejected``: a step refused before execution."""
    return content(
        {
            "tool": tool,
            "effect": effect,
            "permission": permission,
            "reason": reason,
            "state": "rejected",
            "started_at": now,
            "finished_at": now,
            "error": error,
        },
        {"args": args, "approval": approval},
    )


def finish_content(
    state: str,
    now: float,
    result: str | None,
    error: str | None,
    compensation: str | None,
    compensation_error: str | None,
) -> str:
    """``finish``: a step's outcome."""
    return content(
        {
            "state": state,
            "finished_at": now,
            "error": error,
            "compensation_error": compensation_error,
        },
        {"result": result, "compensation": compensation},
    )


_ROW_NAMES = (
    "tool", "effect", "permission", "args", "reason", "state", "idempotency_key",
    "started_at", "finished_at", "result", "error", "compensation", "compensation_error",
    "approval",
)  # fmt: skip
"""The names of ``_deferred.step_row``'s values from its third on."""
_ROW_JSON = frozenset({"args", "result", "compensation", "approval"})


def recorded_content(row: Sequence[Any], requires: list[int]) -> str:
    """``recorded``: a finished step written whole (a read, CALL-4), from its row values
    (``run_id, seq`` then :data:`_ROW_NAMES`, as bound)."""
    plain: dict[str, Any] = {"requires": sorted(set(requires))}
    encoded: dict[str, str | None] = {}
    for name, value in zip(_ROW_NAMES, row[2:], strict=True):
        if name in _ROW_JSON:
            encoded[name] = value
        else:
            plain[name] = value
    return content(plain, encoded)


def recovered_content(now: float, error: str) -> str:
    """``recovered``: a pending step of a dead owner made uncertain (JNL-1)."""
    return content({"state": "uncertain", "finished_at": now, "error": error})


def resolve_content(
    applied: bool,
    result: str | None,
    compensation: str | None,
    compensation_error: str | None,
    resolved_by: str | None = None,
) -> str:
    """``resolve``: a person's resolution (a ``None`` result keeps the step's result) and
    who made it (``resolved_by`` as stored: scrubbed, ``None`` when not said)."""
    encoded = {"compensation": compensation} | ({"result": result} if result is not None else {})
    return content(
        {
            "resolution": "applied" if applied else "not_applied",
            "resolved_by": resolved_by,
            "compensation_error": compensation_error,
            "rollback_state": None,
            "rollback_reason": None,
        },
        encoded,
    )


def rollback_content(state: str | None, reason: str | None) -> str:
    """``rollback_state``: a step's rollback state."""
    return content({"rollback_state": state, "rollback_reason": reason})


def overwrite_content(decision: str | None) -> str:
    """``overwrite``: a person's decision that the compensation may overwrite (RB-10)."""
    return content({}, {"overwrite": decision})
