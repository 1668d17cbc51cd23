"""How the SQLite journal stores each run's hash chain (``_chain.py``) and appends to it.

Since schema 5 a step's own records live in the step's row: its first record (``begin``,
``rejected`` or ``recorded``) and its ``finish`` are each kept as a link ``seq:kind:hash``
in the row's ``links`` column (space-separated), and their ``content`` is not stored
twice: it is computed again, at verification and export, from the row's own fields
(:func:`row_records`), which those records set and nothing later changes.

The rarer records (``resolve``, ``rollback_state``, ``overwrite``, ``recovered``) are kept
whole in the ``chain`` table as before, under the key ``(runs.num << 32) | seq``
(:func:`key_range`). A resolution changes fields a step's ``finish`` (or ``recorded``)
record holds, so it first moves that record, content and all, from the row into the
``chain`` table (:func:`move_links`). Records written before schema 5 stay in the
``chain`` table, whole: a migrated journal verifies as before.

The run's head is named by its tail row, the step numbered highest: by its ``head``
column (``seq:hash``) when the last record is kept elsewhere (another step's link, a
``chain`` record), else by its own last link (:func:`parse_head`). Each append reads it
inside the caller's ``BEGIN IMMEDIATE`` transaction (one descent of the steps' primary
key: no other writer runs until the commit), and writes the step's own row and, only
when the record is not the tail row's, the tail row's ``head``, which is most often on
the same page. A step's commit so writes one row's page and no other B-tree: a second
one per record (schema 3's layout), or the run's row, made the journal's commits 20 to 40
points slower under ``process`` durability (docs/operate.md, "Figures").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import JournalError, UnknownRunError
from . import _chain as chain
from ._chain import ChainRecord, link_hash

__all__ = [
    "SEQ_BITS",
    "SEQ_MASK",
    "ChainHeads",
    "PendingLink",
    "assemble",
    "chain_rows",
    "key_range",
    "link_row",
    "move_links",
    "parse_head",
    "row_records",
    "sqlite_append",
]

SEQ_BITS = 32
"""The low bits of a ``chain`` record's key that hold its ``seq``; the high ones ``runs.num``."""
SEQ_MASK = (1 << SEQ_BITS) - 1

_INSERT = (
    "INSERT INTO chain (id, run_id, seq, step, kind, content, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)

LINK_COLUMNS = (
    "seq, links, run_id, seq, tool, effect, permission, args, reason, state, idempotency_key, "
    "started_at, finished_at, result, error, compensation, compensation_error, approval, owner"
)
"""What :func:`row_records` reads of a step's row: ``seq, links`` then the values of
``_deferred.step_row`` (``run_id`` .. ``approval``), then ``owner``."""


def key_range(num: int | None) -> tuple[int, int]:
    """The first and last key of the run numbered ``num`` (``(1, 0)``, empty, for ``None``:
    a run row made behind the journal's back, which has no records)."""
    if num is None:
        return (1, 0)
    base = num << SEQ_BITS
    return (base, base | SEQ_MASK)


_HEAD = (
    "SELECT r.chained, r.num, s.seq, s.links, s.head FROM runs r "
    "LEFT JOIN steps s ON s.run_id = r.id WHERE r.id = ? ORDER BY s.seq DESC LIMIT 1"
)  # the steps' primary key in reverse: one descent, no sort, nothing materialised
"""The run's ``chained`` and ``num``, and its tail row (the step numbered highest):
``seq``, ``links``, ``head``."""


def parse_head(links: str | None, head: str | None) -> tuple[int, str]:
    """The run's head from its tail row: its ``head`` (``seq:hash``) when set, else its
    last link, else ``(0, "")`` (no record yet). Raises :class:`ValueError` when malformed."""
    if head:
        seq, digest = head.split(":")
        return int(seq), digest
    if links:
        seq, _, digest = links.rsplit(" ", 1)[-1].split(":")
        return int(seq), digest
    return 0, ""


def _head(c: sqlite3.Connection, run_id: str) -> tuple[int, int, int, str] | None:
    """``(num, tail, seq, hash)``: the run's number, its tail row's step number (0: no
    step) and its head, read in the caller's transaction; ``None`` for a run written
    before the chain (``chained = 0``: it never gets records). Raises
    :class:`JournalError` for an unknown run, one with no number, a malformed head, or a
    chain of 2**32 records."""
    row = c.execute(_HEAD, (run_id,)).fetchone()
    if row is None:
        raise UnknownRunError(f"no run {run_id!r} to append a chain record to")
    if not row[0]:
        return None
    if row[1] is None:
        raise JournalError(
            f"run {run_id!r} has no number (runs.num): it was not made by the journal"
        )
    try:
        seq, digest = parse_head(row[3], row[4])
    except ValueError:
        raise JournalError(
            f"run {run_id!r}: its chain head (step {row[2]}) is not the journal's; "
            "run reversi verify"
        ) from None
    if seq >= SEQ_MASK:
        raise JournalError(f"run {run_id!r} has {SEQ_MASK} chain records, the most it can hold")
    return int(row[1]), int(row[2] or 0), seq, digest


def _move_head(c: sqlite3.Connection, run_id: str, tail: int, seq: int, digest: str) -> None:
    """Make the tail row name the head ``seq:digest`` (a record kept elsewhere)."""
    c.execute(
        "UPDATE steps SET head = ? WHERE run_id = ? AND seq = ?", (f"{seq}:{digest}", run_id, tail)
    )


def sqlite_append(
    c: sqlite3.Connection,
    run_id: str,
    step: int | None,
    kind: str,
    text: str,
    heads: ChainHeads | None = None,
) -> None:
    """Append a record, whole, to the ``chain`` table and make the run's tail row name it
    as the head, inside the caller's write transaction (for the rarer records: a step's
    own records are links of its row, :class:`PendingLink`). Appends nothing to a run
    written before the chain. ``heads`` is not used (kept for the callers' signatures).
    Raises :class:`JournalError` as :func:`_head` does."""
    head = _head(c, run_id)
    if head is None:  # written before the chain: a record would make it look tampered
        return
    num, tail, seq, prev = head
    seq += 1
    digest = link_hash(prev, seq, step, kind, text)
    c.execute(_INSERT, ((num << SEQ_BITS) | seq, run_id, seq, step, kind, text, prev, digest))
    _move_head(c, run_id, tail, seq, digest)


class PendingLink:
    """A step's own record as a link of its row: computed from the run's head (read in
    the caller's write transaction: no other writer runs until it commits) before the
    row's write, which stores :attr:`link` (``None`` for a run written before the chain:
    no link); :meth:`commit` after it makes the tail row name it when the step's row is
    not the tail (:attr:`tail` is true when it is: its last link is the head)."""

    __slots__ = ("_tail_seq", "link", "run_id", "step", "tail")

    def __init__(
        self,
        c: sqlite3.Connection,
        run_id: str,
        step: int,
        kind: str,
        text: str,
        heads: ChainHeads | None = None,
    ) -> None:
        self.run_id, self.step = run_id, step
        head = _head(c, run_id)
        if head is None:
            self.link: str | None = None
            self.tail, self._tail_seq = True, 0
            return
        _, self._tail_seq, seq, prev = head
        self.tail = step >= self._tail_seq
        seq += 1
        self.link = f"{seq}:{kind}:{link_hash(prev, seq, step, kind, text)}"

    def commit(self, c: sqlite3.Connection, heads: ChainHeads | None = None) -> None:
        """Once the step's row holds :attr:`link`: when that row is not the run's tail,
        make the tail row name it as the head."""
        if self.link is not None and not self.tail:
            seq, _, digest = self.link.split(":")
            _move_head(c, self.run_id, self._tail_seq, int(seq), digest)


def link_row(row: Sequence[Any], link: str | None) -> tuple[Any, ...]:
    """``_deferred.step_row`` values with the row's ``links`` added last."""
    return (*row, link)


class ChainHeads:
    """Kept for the journal's and ``_deferred``'s signatures; holds nothing since schema 5
    (the head is read from the run's tail row in each write transaction, a point read of
    the page the write changes anyway)."""

    __slots__ = ()

    def forget(self, run_id: str) -> None:
        """Nothing to forget."""


# -- reading the chain back -------------------------------------------------------------


def _links(text: str | None) -> list[tuple[int, str, str]]:
    """A row's links as ``(seq, kind, hash)``; raises :class:`ValueError` for a malformed one."""
    out = []
    for part in (text or "").split():
        seq, kind, digest = part.split(":")
        out.append((int(seq), kind, digest))
    return out


def _content(kind: str, row: Sequence[Any], requires: list[int]) -> str | None:
    """The content of a row's ``kind`` record, from the row's fields (:data:`LINK_COLUMNS`
    from its third value on), or ``None`` for a kind a row does not hold."""
    values = row[:16]
    (_, _, tool, effect, permission, args, reason, state, _, started, finished, result,
     error, compensation, cerror, approval) = values  # fmt: skip
    if kind == "begin":
        return chain.begin_content(
            tool, effect, permission, args, reason, row[16], started, approval, requires
        )
    if kind == "finish":
        return chain.finish_content(state, finished, result, error, compensation, cerror)
    if kind == "rejected":
        return chain.rejected_content(
            tool, effect, permission, args, reason, started, error, approval
        )
    if kind == "recorded":
        return chain.recorded_content(values, requires)
    return None


def row_records(
    run_id: str, rows: Iterable[Sequence[Any]], edges: dict[int, list[int]]
) -> tuple[list[tuple[int, int, str, str, str]], str | None]:
    """The records kept as links in the run's step rows (:data:`LINK_COLUMNS`), as
    ``(seq, step, kind, content, hash)`` with their content computed from the row, and
    what is wrong with the first malformed link (``None`` when none is)."""
    out: list[tuple[int, int, str, str, str]] = []
    for row in rows:
        step = int(row[0])
        try:
            links = _links(row[1])
        except ValueError:
            return out, f"step {step}'s links are not the journal's (edited behind it)"
        for seq, kind, digest in links:
            text = _content(kind, row[2:], edges.get(step, []))
            if text is None:
                return out, f"step {step}'s row holds a link of unknown kind {kind!r}"
            out.append((seq, step, kind, text, digest))
    return out, None


def assemble(
    run_id: str, stored: Sequence[ChainRecord], linked: Iterable[tuple[int, int, str, str, str]]
) -> tuple[list[ChainRecord], str | None]:
    """One chain from the ``chain`` table's records and the rows' links, in ``seq`` order;
    a link's ``prev_hash`` is the hash of the record before it (a link stores none: its
    hash covers it). Returns it and what is wrong when two records share a ``seq``."""
    merged: list[ChainRecord | tuple[int, int, str, str, str]] = [*stored, *linked]
    merged.sort(key=lambda r: r.seq if isinstance(r, ChainRecord) else r[0])
    out: list[ChainRecord] = []
    twice = None
    prev = ""
    for item in merged:
        if isinstance(item, ChainRecord):
            rec = item
        else:
            seq, step, kind, text, digest = item
            rec = ChainRecord(run_id, seq, step, kind, text, prev, digest, linked=True)
        if out and out[-1].seq == rec.seq and twice is None:
            twice = f"record {rec.seq} is stored twice (a record inserted behind the journal)"
        out.append(rec)
        prev = rec.hash
    return out, twice


def chain_rows(c: Any, run_id: str) -> tuple[bool, tuple[int, str], list[tuple[Any, ...]]] | None:
    """``(chained, head, rows)``: the run's ``chain`` table records, oldest first, as
    ``(run_id, seq, step, kind, content, prev_hash, hash, id)``, and its head as the run's
    row keeps it; ``None`` for an unknown run."""
    row = c.execute(_HEAD, (run_id,)).fetchone()
    if row is None:
        return None
    try:
        head = parse_head(row[3], row[4])
    except ValueError:
        head = (-1, "")  # verification reports the malformed link or head
    first, last = key_range(row[1])
    rows = c.execute(
        "SELECT run_id, seq, step, kind, content, prev_hash, hash, id FROM chain "
        "WHERE id BETWEEN ? AND ? ORDER BY id",
        (first, last),
    ).fetchall()
    return bool(row[0]), head, rows


def linked_rows(
    c: Any, run_id: str, seq: int | None = None
) -> list[tuple[int, int, str, str, str]]:
    """The records kept as links in the run's rows (of step ``seq`` alone if given), as
    :func:`row_records` makes them; a malformed link is left out (verification reports it)."""
    where = "run_id = ? AND links IS NOT NULL" + ("" if seq is None else " AND seq = ?")
    params: tuple[Any, ...] = (run_id,) if seq is None else (run_id, seq)
    query = f"SELECT {LINK_COLUMNS} FROM steps WHERE {where} ORDER BY seq"  # noqa: S608 - constant columns
    rows = c.execute(query, params).fetchall()
    return row_records(run_id, rows, run_edges(c, run_id))[0]


def run_edges(c: Any, run_id: str) -> dict[int, list[int]]:
    """Each step's ``requires`` edges, sorted."""
    edges: dict[int, list[int]] = {}
    for seq, req in c.execute(
        "SELECT seq, requires_seq FROM edges WHERE run_id = ? ORDER BY seq, requires_seq",
        (run_id,),
    ):
        edges.setdefault(seq, []).append(req)
    return edges


def move_links(c: sqlite3.Connection, run_id: str, seq: int, kinds: frozenset[str]) -> None:
    """Move step ``seq``'s links of ``kinds`` from its row into the ``chain`` table, whole
    (their content as the row gives it now, their ``prev_hash`` found in the chain), in
    the caller's transaction: before a write that changes the fields they hold."""
    row = c.execute(
        "SELECT links FROM steps WHERE run_id = ? AND seq = ?", (run_id, seq)
    ).fetchone()
    if row is None or not row[0] or not any(f":{k}:" in row[0] for k in kinds):
        return
    head = _head(c, run_id)
    if head is None:
        return
    num, tail, head_seq, head_hash = head
    found = chain_rows(c, run_id)
    stored = [ChainRecord(*r[:7]) for r in found[2]] if found else []
    records, _ = assemble(run_id, stored, linked_rows(c, run_id))
    hashes = {r.seq: r.hash for r in records}
    keep = row[0]
    for rec in linked_rows(c, run_id, seq):
        r_seq, step, kind, text, digest = rec
        if kind not in kinds:
            continue
        c.execute(
            _INSERT,
            ((num << SEQ_BITS) | r_seq, run_id, r_seq, step, kind, text,
             hashes.get(r_seq - 1, ""), digest),
        )  # fmt: skip
        keep = keep.replace(f"{r_seq}:{kind}:{digest}", "")
    c.execute(
        "UPDATE steps SET links = nullif(trim(?), '') WHERE run_id = ? AND seq = ?",
        (" ".join(keep.split()), run_id, seq),
    )
    _move_head(c, run_id, tail, head_seq, head_hash)  # the head may have been a moved link
