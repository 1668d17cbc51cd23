"""The requires index: edges to the newest matching step, found without scanning the run."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reversi_core import Manifest
from reversi_core._edges import EdgeIndex

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "id": {"type": "string"}}}


def manifest(name: str, requires: list[dict[str, object]]) -> Manifest:
    return Manifest.model_validate(
        {
            "name": name,
            "effect": "read_only",
            "permission": "t:r",
            "requires": requires,
            "input_schema": SCHEMA,
        }
    )


MKDIR = manifest(
    "t.mkdir",
    [
        {
            "tool": "t.mkdir",
            "match": [{"this": "args.path", "earlier": "result.created", "relation": "within"}],
        }
    ],
)
WRITE = manifest(
    "t.write",
    [
        {
            "tool": "t.mkdir",
            "match": [{"this": "args.path", "earlier": "result.created", "relation": "within"}],
        },
        {
            "tool": "t.write",
            "match": [{"this": "args.path", "earlier": "args.path", "relation": "same_path"}],
        },
    ],
)
COMMENT = manifest(
    "t.comment", [{"tool": "t.create", "match": [{"this": "args.id", "earlier": "result.id"}]}]
)


def index() -> EdgeIndex:
    return EdgeIndex.for_manifests([MKDIR, WRITE, COMMENT])


@pytest.mark.req("DEP-1")
def test_repeated_writes_link_only_to_the_previous_one() -> None:
    idx = index()
    for seq in (1, 2, 3):
        assert idx.edges(WRITE, {"path": "./a.txt"}) == ([] if seq == 1 else [seq - 1])
        idx.add(seq, "t.write", {"path": "a.txt" if seq % 2 else "./a.txt"}, {})


@pytest.mark.req("DEP-1")
def test_within_finds_the_directory_through_each_parent() -> None:
    idx = index()
    idx.add(1, "t.mkdir", {"path": "a/b"}, {"created": ["a", "a/b"]})
    idx.add(2, "t.mkdir", {"path": "x"}, {"created": ["x"]})
    assert idx.edges(WRITE, {"path": "a/b/c/f.txt"}) == [1]
    assert idx.edges(WRITE, {"path": "x/f.txt"}) == [2]
    assert idx.edges(WRITE, {"path": "a"}) == []  # not strictly inside
    assert idx.edges(WRITE, {"path": "ab/f.txt"}) == []


@pytest.mark.req("DEP-1")
def test_failed_steps_and_unwatched_tools_are_never_linked() -> None:
    idx = index()
    idx.add(1, "t.write", {"path": "a.txt"}, None)
    idx.add(2, "t.write", {"path": "a.txt"}, None)
    idx.mark_not_applied(2)
    assert idx.edges(WRITE, {"path": "a.txt"}) == [1]
    idx.add(3, "t.read", {"path": "a.txt"}, {"content": "x" * 1000})
    assert 3 not in idx.entries


@pytest.mark.req("DEP-1")
def test_equals_on_a_result_value() -> None:
    idx = index()
    idx.add(1, "t.create", {}, {"id": "I-1"})
    idx.add(2, "t.create", {}, {"id": "I-2"})
    assert idx.edges(COMMENT, {"id": "I-1"}) == [1]
    assert idx.edges(COMMENT, {"id": "I-3"}) == []


# -- the index against a scan of the whole run ------------------------------------------

_PATHS = ["a", "a/b", "a/b/c.txt", "a/x.txt", "b", "b/c.txt", "./a/b", "a//b/c.txt"]
_step = st.one_of(
    st.tuples(st.just("t.mkdir"), st.sampled_from(_PATHS), st.booleans()),
    st.tuples(st.just("t.write"), st.sampled_from(_PATHS), st.booleans()),
)


def _scan(steps: list[tuple[int, str, str, bool]], path: str) -> list[int]:
    """WRITE's edges by brute force: per requirement, the newest applied match."""
    target = posixpath.normpath(path.strip("/"))
    found = set()
    for tool, holds in (
        ("t.mkdir", lambda earlier: target.startswith(posixpath.normpath(earlier) + "/")),
        ("t.write", lambda earlier: posixpath.normpath(earlier.strip("/")) == target),
    ):
        for seq, step_tool, step_path, applied in reversed(steps):
            if step_tool == tool and applied and holds(step_path):
                found.add(seq)
                break
    return sorted(found)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_step, max_size=40), st.sampled_from(_PATHS), st.data())
@pytest.mark.req("DEP-1")
def test_edges_equal_a_scan_of_the_whole_run(
    steps: list[tuple[str, str, bool]], path: str, data: st.DataObject
) -> None:
    idx = index()
    journaled: list[tuple[int, str, str, bool]] = []
    for seq, (tool, step_path, applied) in enumerate(steps, start=1):
        idx.add(seq, tool, {"path": step_path}, None)  # begun, in order
        journaled.append((seq, tool, step_path, applied))
    # ... and finished in any order (calls side by side): results are indexed late
    for seq, tool, step_path, applied in data.draw(st.permutations(journaled)):
        created = [step_path] if tool == "t.mkdir" else []
        idx.add(seq, tool, {"path": step_path}, {"created": created})
        if not applied:
            idx.mark_not_applied(seq)
    assert idx.edges(WRITE, {"path": path}) == _scan(journaled, path)


def test_a_result_indexed_late_keeps_the_newest_step_first() -> None:
    idx = index()
    idx.add(1, "t.create", {}, None)
    idx.add(2, "t.create", {}, None)
    idx.add(2, "t.create", {}, {"id": "I-1"})  # the later call finished first
    idx.add(1, "t.create", {}, {"id": "I-1"})
    assert idx.edges(COMMENT, {"id": "I-1"}) == [2]


# -- steps whose result is not known yet -------------------------------------------------


@pytest.mark.req("DEP-1")
def test_a_directory_still_being_made_is_a_possible_dependency() -> None:
    """A write sent while the fs.make_dir before it is in flight (its ``created`` not
    known) depends on it; once its result arrives, only a real match links."""
    idx = index()
    idx.add(1, "t.mkdir", {"path": "a"}, {"created": ["a"]})
    idx.add(2, "t.mkdir", {"path": "d"}, None)  # in flight
    assert idx.edges(WRITE, {"path": "d/f.txt"}) == [2]
    assert idx.edges(WRITE, {"path": "a/f.txt"}) == [1, 2]  # 2 is newer than 1 and undecided
    idx.add(2, "t.mkdir", {"path": "d"}, {"created": ["d"]})
    assert idx.edges(WRITE, {"path": "d/f.txt"}) == [2]
    assert idx.edges(WRITE, {"path": "a/f.txt"}) == [1]
    idx.add(3, "t.mkdir", {"path": "e"}, None)
    idx.mark_not_applied(3)  # failed: made nothing
    assert idx.edges(WRITE, {"path": "e/f.txt"}) == []
    assert idx.unsettled == {"t.mkdir": []}


@pytest.mark.req("DEP-1")
def test_an_uncertain_step_rebuilt_from_the_journal_stays_a_possible_dependency() -> None:
    idx = index()
    idx.add(4, "t.mkdir", {"path": "d"}, None, settled=False)  # uncertain, as journaled
    idx.add(5, "t.create", {}, None, settled=False)
    assert idx.edges(WRITE, {"path": "d/f.txt"}) == [4]
    assert idx.edges(COMMENT, {"id": "I-9"}) == [5]
    assert idx.edges(COMMENT, {}) == []  # nothing to compare: no edge
    idx.add(6, "t.mkdir", {"path": "x"}, None, settled=True)  # succeeded without a result
    assert idx.edges(WRITE, {"path": "x/f.txt"}) == [4]


def _scan_unsettled(
    steps: list[tuple[int, str, str, bool]], settled: set[int], path: str
) -> list[int]:
    """WRITE's edges when the steps outside ``settled`` have no result yet: the newest
    applied match among the settled, plus every unsettled applied t.mkdir newer than it."""
    target = posixpath.normpath(path.strip("/"))
    found: set[int] = set()
    newest = 0
    for seq, tool, step_path, applied in reversed(steps):
        inside = target.startswith(posixpath.normpath(step_path) + "/")
        if tool == "t.mkdir" and applied and seq in settled and inside:
            newest = seq
            found.add(seq)
            break
    if target != ".":
        found.update(
            seq
            for seq, tool, _, applied in steps
            if tool == "t.mkdir" and applied and seq not in settled and seq > newest
        )
    for seq, tool, step_path, applied in reversed(steps):
        if tool == "t.write" and applied and posixpath.normpath(step_path.strip("/")) == target:
            found.add(seq)
            break
    return sorted(found)


@settings(max_examples=500, deadline=None)
@given(st.lists(_step, max_size=30), st.sampled_from(_PATHS), st.data())
@pytest.mark.req("DEP-1")
def test_edges_with_steps_in_flight_equal_a_scan(
    steps: list[tuple[str, str, bool]], path: str, data: st.DataObject
) -> None:
    idx = index()
    journaled: list[tuple[int, str, str, bool]] = []
    for seq, (tool, step_path, applied) in enumerate(steps, start=1):
        idx.add(seq, tool, {"path": step_path}, None)
        journaled.append((seq, tool, step_path, applied))
    finished = data.draw(st.lists(st.sampled_from(journaled), unique=True)) if journaled else []
    for seq, tool, step_path, applied in finished:
        created = [step_path] if tool == "t.mkdir" else []
        idx.add(seq, tool, {"path": step_path}, {"created": created})
        if not applied:
            idx.mark_not_applied(seq)
    # a step not finished yet is pending: it may have applied (its `applied` is decided later)
    in_flight = {seq for seq, *_ in journaled} - {seq for seq, *_ in finished}
    view = [(seq, t, p, a or seq in in_flight) for seq, t, p, a in journaled]
    settled = {seq for seq, *_ in finished}
    assert idx.edges(WRITE, {"path": path}) == _scan_unsettled(view, settled, path)
