"""The statements of the PostgreSQL journal's hot path, and its values as PostgreSQL takes them.

Each call through the gateway is one statement per commit: a data-modifying ``WITH``
takes the run's next step number (``runs.last_seq``), writes the step and its edges
together, so that a commit is one round trip to the server and a step that is not
written gives its number back with the rest of its transaction.
"""

from __future__ import annotations

from typing import Any

from ._chain import recorded_content

__all__ = [
    "BEGIN_STEP",
    "CHAIN_APPEND",
    "FINISH_STEP",
    "INSERT_DEFERRED",
    "INSERT_STRICT",
    "RECORD_REJECTED",
    "pg_row",
    "pg_text",
]


def _chain_set(step: str, kind: str, text: str) -> str:
    """The ``SET`` of the run's row that moves its chain's head on by one record: the
    hash of ``_chain.link_hash``, computed by the server (``step``, ``kind`` and ``text``
    are SQL expressions; on the right of ``SET`` every column is its value before). A run
    written before the chain (``chained`` false) keeps its head, and each statement
    inserts its record only ``WHERE chained``: it never gets records."""
    return (
        "chain_seq = CASE WHEN chained THEN chain_seq + 1 ELSE chain_seq END, "
        "chain_prev = CASE WHEN chained THEN chain_hash ELSE chain_prev END, "
        "chain_hash = CASE WHEN chained THEN "
        "encode(sha256(convert_to(chain_hash || '|' || (chain_seq + 1)::text || "
        f"'|' || {step} || '|' || {kind} || '|' || {text}, 'UTF8')), 'hex') "
        "ELSE chain_hash END"
    )


_CHAIN_INSERT = "INSERT INTO chain (run_id, seq, step, kind, content, prev_hash, hash) "

# one record appended to a run's chain, its head moved on (resolve, rollback states,
# overwrite decisions, recovery: each in the transaction of the write it records)
CHAIN_APPEND = (
    "WITH h AS (UPDATE runs SET "  # noqa: S608 - constant SQL fragments
    + _chain_set("%(step)s::text", "%(kind)s::text", "%(content)s::text")
    + " WHERE id = %(run)s RETURNING chained, chain_seq, chain_prev, chain_hash) "
    + _CHAIN_INSERT
    + "SELECT %(run)s, chain_seq, %(step)s, %(kind)s, %(content)s, chain_prev, chain_hash FROM h "
    "WHERE chained"
)

_STEP_VALUES = (
    "run_id, seq, tool, effect, permission, args, reason, state, idempotency_key, started_at, "
    "finished_at, result, error, compensation, compensation_error, approval"
)

# A finished step (a read, CALL-4) under its reserved number, with its edges, in one
# statement. The values are those of _deferred.step_row, then the edges.
INSERT_FINISHED = (
    f"WITH s AS (INSERT INTO steps ({_STEP_VALUES}) "  # noqa: S608 - constant column lists
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) {conflict} "
    "RETURNING run_id, seq), "
    "e AS (INSERT INTO edges (run_id, seq, requires_seq) "
    "SELECT s.run_id, s.seq, r FROM s, unnest(%s::integer[]) AS r), "
    "c AS (SELECT %s::text AS content), "
    "h AS (UPDATE runs SET "
    + _chain_set("s.seq::text", "'recorded'", "c.content").replace("{", "{{").replace("}", "}}")
    + " FROM s, c WHERE runs.id = s.run_id "
    "RETURNING runs.id, runs.chained, runs.chain_seq, runs.chain_prev, runs.chain_hash, s.seq, "
    "c.content), "
    "k AS (" + _CHAIN_INSERT + "SELECT id, chain_seq, seq, 'recorded', content, chain_prev, "
    "chain_hash FROM h WHERE chained) "
    "SELECT seq FROM s"
)
INSERT_STRICT = INSERT_FINISHED.format(conflict="")
INSERT_DEFERRED = INSERT_FINISHED.format(conflict="ON CONFLICT DO NOTHING")

# begin_step: take the run's next number only if it is open, write the pending step and
# its edges; one statement, one commit.
BEGIN_STEP = (
    "WITH r AS (UPDATE runs SET last_seq = last_seq + 1, "  # noqa: S608 - constant SQL fragments
    + _chain_set("(last_seq + 1)::text", "'begin'", "%(content)s::text")
    + " WHERE id = %(run)s AND status = 'open' "
    "RETURNING last_seq, chained, chain_seq, chain_prev, chain_hash), "
    "s AS (INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
    "idempotency_key, owner, started_at, approval) "
    "SELECT %(run)s, r.last_seq, %(tool)s, %(effect)s, %(permission)s, %(args)s, %(reason)s, "
    "'pending', 'reversi-' || %(run)s || '-' || r.last_seq, %(owner)s, %(now)s, %(approval)s "
    "FROM r RETURNING seq), "
    "e AS (INSERT INTO edges (run_id, seq, requires_seq) "
    "SELECT %(run)s, s.seq, q FROM s, unnest(%(edges)s::integer[]) AS q), "
    "k AS (" + _CHAIN_INSERT + "SELECT %(run)s, chain_seq, last_seq, 'begin', %(content)s, "
    "chain_prev, chain_hash FROM r WHERE chained) "
    "SELECT seq FROM s"
)

RECORD_REJECTED = (
    "WITH r AS (UPDATE runs SET last_seq = last_seq + 1, "  # noqa: S608 - constant SQL fragments
    + _chain_set("(last_seq + 1)::text", "'rejected'", "%(content)s::text")
    + " WHERE id = %(run)s RETURNING last_seq, chained, chain_seq, chain_prev, chain_hash), "
    "s AS (INSERT INTO steps (run_id, seq, tool, effect, permission, args, reason, state, "
    "idempotency_key, started_at, finished_at, error, approval) "
    "SELECT %(run)s, r.last_seq, %(tool)s, %(effect)s, %(permission)s, %(args)s, %(reason)s, "
    "'rejected', 'reversi-' || %(run)s || '-' || r.last_seq, %(now)s, %(now)s, %(error)s, "
    "%(approval)s FROM r RETURNING seq), "
    "k AS (" + _CHAIN_INSERT + "SELECT %(run)s, chain_seq, last_seq, 'rejected', %(content)s, "
    "chain_prev, chain_hash FROM r WHERE chained) "
    "SELECT seq FROM s"
)

# finish_step: the outcome, or (when another process decided the step was orphaned) a
# late_outcome event instead; one statement.
FINISH_STEP = (
    "WITH u AS (UPDATE steps SET state = %(state)s, finished_at = %(now)s, result = %(result)s, "  # noqa: S608 - constant SQL fragments
    "error = %(error)s, compensation = %(compensation)s, compensation_error = %(cerror)s "
    "WHERE run_id = %(run)s AND seq = %(seq)s AND state = 'pending' RETURNING seq), "
    "h AS (UPDATE runs SET "
    + _chain_set("%(seq)s::text", "'finish'", "%(content)s::text")
    + " WHERE id = %(run)s AND EXISTS (SELECT 1 FROM u) "
    "RETURNING chained, chain_seq, chain_prev, chain_hash), "
    "k AS (" + _CHAIN_INSERT + "SELECT %(run)s, chain_seq, %(seq)s, 'finish', %(content)s, "
    "chain_prev, chain_hash FROM h WHERE chained) "
    "INSERT INTO events (run_id, seq, at, kind, detail) "
    "SELECT %(run)s, %(seq)s, %(now)s, 'late_outcome', %(detail)s WHERE NOT EXISTS (SELECT 1 FROM u)"
)


def pg_text(value: str | None) -> str | None:
    """``value`` as PostgreSQL ``text`` takes it: a NUL character (which it cannot hold)
    becomes U+FFFD. JSON columns need none of this: their text spells NUL as ``\\u0000``."""
    if value is None or "\0" not in value:
        return value
    return value.replace("\0", "\ufffd")


def pg_row(row: tuple[Any, ...], requires: list[int]) -> tuple[Any, ...]:
    """A step's values, encoded by :func:`~._deferred.step_row`, as the statements above
    take them: free text made storable (:func:`pg_text`), the edges last."""
    values = list(row)
    for i in (2, 6, 12, 14):  # tool, reason, error, compensation_error
        values[i] = pg_text(values[i])
    edges = sorted(set(requires))
    return (*values, edges, recorded_content(values, edges))
