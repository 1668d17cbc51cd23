"""How the SQLite journal stores each run's hash chain (``_chain.py``) and appends to it.

The ``chain`` table is one B-tree: its ``id`` (an ``INTEGER PRIMARY KEY``, SQLite's
rowid) is ``(runs.num << 32) | seq``, so a run's records are one range of keys, in
order, and appending a record writes one page (the last leaf of the run's range) rather
than two (a table and an index on ``(run_id, seq)``). What a step write costs in SQLite
is mostly the pages its commit writes to the write-ahead log, one frame each: a second
B-tree per record made the journal's commits under ``process`` durability about 40%
slower (docs/performance.md). ``runs.num`` is the run's number, given once by
``create_run`` (``max + 1``) and never changed; ``run_id`` and ``seq`` are kept in each
record too, and the verification checks that they agree with the key.

Appending needs the chain's head (its last key and hash). A journal handle keeps the
head of each run it last wrote (:class:`ChainHeads`), and checks it inside the write
transaction at no extra cost: the record is inserted under the next key only if the
record under the cached key still holds the cached hash (a point read of the page the
insert writes anyway), and the primary key refuses the next key if another handle or
process took it. When either check fails (another writer appended, this handle's last
transaction was rolled back, the run was deleted and made again), the head is read from
the table and the insert made again, in the same transaction.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import JournalError
from ._chain import link_hash

__all__ = ["SEQ_BITS", "SEQ_MASK", "ChainHeads", "chain_rows", "key_range", "sqlite_append"]

SEQ_BITS = 32
"""The low bits of a record's key that hold its ``seq``; the high ones hold ``runs.num``."""
SEQ_MASK = (1 << SEQ_BITS) - 1

_INSERT = (
    "INSERT INTO chain (id, run_id, seq, step, kind, content, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_AFTER = (
    "INSERT INTO chain (id, run_id, seq, step, kind, content, prev_hash, hash) "
    "SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chain WHERE id = ? AND hash = ?)"
)


def key_range(num: int | None) -> tuple[int, int]:
    """The first and last key of the run numbered ``num`` (``(1, 0)``, empty, for ``None``:
    a run row made behind the journal's back, which has no records)."""
    if num is None:
        return (1, 0)
    base = num << SEQ_BITS
    return (base, base | SEQ_MASK)


def _head(c: sqlite3.Connection, run_id: str) -> tuple[int, str] | None:
    """The run's last key and hash as stored (the key before its first record and ``""``
    when it has none), or ``None`` for a run written before the chain (``chained = 0``:
    it never gets records). Raises :class:`JournalError` for an unknown run."""
    row = c.execute("SELECT num, chained FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise JournalError(f"no run {run_id!r} to append a chain record to")
    if not row[1]:
        return None
    if row[0] is None:
        raise JournalError(
            f"run {run_id!r} has no number (runs.num): it was not made by the journal"
        )
    first, last = key_range(row[0])
    found = c.execute(
        "SELECT id, hash FROM chain WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT 1",
        (first, last),
    ).fetchone()
    return (int(found[0]), str(found[1])) if found else (first, "")


def sqlite_append(
    c: sqlite3.Connection,
    run_id: str,
    step: int | None,
    kind: str,
    text: str,
    heads: ChainHeads | None = None,
) -> None:
    """Append a record to ``run_id``'s chain inside the caller's write transaction
    (``BEGIN IMMEDIATE``: no other writer runs between the check of the head and the
    insert). ``heads``: the handle's cache (see the module docstring), or ``None`` to read
    the head. Appends nothing to a run written before the chain (``runs.chained`` false).
    Raises :class:`JournalError` for an unknown run or a chain of 2**32 records."""
    cached = heads.get(run_id) if heads is not None else None
    if cached is not None:
        key, prev = cached
        seq = (key & SEQ_MASK) + 1
        if seq <= SEQ_MASK:
            digest = link_hash(prev, seq, step, kind, text)
            try:
                done = c.execute(
                    _INSERT_AFTER, (key + 1, run_id, seq, step, kind, text, prev, digest, key, prev)
                ).rowcount
            except sqlite3.IntegrityError:  # the next key is taken: another writer appended
                done = 0
            if done == 1:
                heads.put(run_id, key + 1, digest)  # type: ignore[union-attr]
                return
    head = _head(c, run_id)
    if head is None:  # written before the chain: a record would make it look tampered
        return
    key, prev = head
    seq = (key & SEQ_MASK) + 1
    if seq > SEQ_MASK:
        raise JournalError(f"run {run_id!r} has {SEQ_MASK} chain records, the most it can hold")
    digest = link_hash(prev, seq, step, kind, text)
    c.execute(_INSERT, (key + 1, run_id, seq, step, kind, text, prev, digest))
    if heads is not None:
        heads.put(run_id, key + 1, digest)


class ChainHeads:
    """Each run's chain head as one journal handle last appended it: ``run_id -> (key,
    hash)``. A hint, checked by every append (:func:`sqlite_append`), never trusted; not
    thread-safe (the journal's lock guards it). Holds at most :attr:`LIMIT` runs."""

    LIMIT = 1024
    __slots__ = ("_heads",)

    def __init__(self) -> None:
        self._heads: dict[str, tuple[int, str]] = {}

    def get(self, run_id: str) -> tuple[int, str] | None:
        return self._heads.get(run_id)

    def put(self, run_id: str, key: int, digest: str) -> None:
        heads = self._heads
        if run_id not in heads and len(heads) >= self.LIMIT:
            heads.clear()  # a long-lived handle over many runs: start again, it is a hint
        heads[run_id] = (key, digest)

    def forget(self, run_id: str) -> None:
        self._heads.pop(run_id, None)


def chain_rows(c: Any, run_id: str) -> tuple[bool, list[tuple[Any, ...]]] | None:
    """``(chained, rows)`` of the run's records, oldest first, as ``(run_id, seq, step,
    kind, content, prev_hash, hash, id)``; ``None`` for an unknown run."""
    row = c.execute("SELECT chained, num FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    first, last = key_range(row[1])
    rows = c.execute(
        "SELECT run_id, seq, step, kind, content, prev_hash, hash, id FROM chain "
        "WHERE id BETWEEN ? AND ? ORDER BY id",
        (first, last),
    ).fetchall()
    return bool(row[0]), rows
