"""The hot-path JSON of ``reversi_core._json``: encoded as exactly as the standard library."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from reversi_core._json import dumps, dumps_line, dumps_text, loads

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_what_is_encoded_reads_back_as_the_standard_library_reads_it(value: object) -> None:
    data = dumps(value)
    assert loads(data) == json.loads(data) == value
    assert loads(dumps_text(value)) == value
    assert dumps_line(value) == data + b"\n"  # one JSON-RPC line


def test_integers_over_64_bits_stay_exact_both_ways() -> None:
    big = 2**70 + 1
    assert loads(b'{"n": 1180591620717411303425}') == {"n": big}
    assert loads(dumps({"n": big})) == {"n": big}
    assert loads('{"n": 18446744073709551617}')["n"] == 2**64 + 1


def test_what_orjson_cannot_encode_is_encoded_by_the_standard_library() -> None:
    assert loads(dumps("caf\udce9")) == "caf\udce9"  # a lone surrogate, spelled in ASCII
    assert dumps_text({"s": "caf\udce9"}) == '{"s":"caf\\udce9"}'
    assert dumps_line({"n": 2**70}) == b'{"n":1180591620717411303424}\n'
    assert dumps({1: "a"}) == b'{"1":"a"}'
    assert dumps({"é": "ü"}).decode("utf-8") == '{"é":"ü"}'


def test_a_float_that_is_not_a_number_has_no_json_spelling() -> None:
    assert dumps([math.nan, math.inf]) == b"[null,null]"


def _read(text: bytes | str) -> tuple[str, object]:
    """What a parser made of ``text``: ("ok", value) or ("error", the exception's type)."""
    try:
        return "ok", json.loads(text)
    except ValueError as exc:
        return "error", type(exc)


def _ours(text: bytes | str) -> tuple[str, object]:
    try:
        return "ok", loads(text)
    except ValueError as exc:
        return "error", type(exc)


@given(JSON)
def test_a_text_the_standard_library_wrote_is_read_as_it_reads_it(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        ours, theirs = loads(text), json.loads(text)
        assert ours == theirs
        assert repr(ours) == repr(theirs)  # 1 stays an int, 1.0 a float, -0.0 keeps its sign


@given(st.binary(max_size=40) | st.text(alphabet='{}[]",:0123456789.eE+-nul \\tr\x00', max_size=40))
def test_any_bytes_are_read_or_refused_as_the_standard_library_does(text: bytes | str) -> None:
    theirs = _read(text)
    ours = _ours(text)
    assert ours[0] == theirs[0]
    if theirs[0] == "ok":
        assert repr(ours[1]) == repr(theirs[1])


def test_integers_outside_64_bits_are_never_read_as_floats() -> None:
    # orjson would read each of these as a float
    for number in (2**64, -(2**63) - 1, 10**30, -(10**25)):
        text = f'{{"n": {number}, "rows": [[1.5, {number}]]}}'
        assert loads(text) == {"n": number, "rows": [[1.5, number]]}
        assert type(loads(str(number))) is int
    assert loads("[1e300, 2.5]") == [1e300, 2.5]  # genuine floats stay floats
    assert loads(str(2**64 - 1)) == 2**64 - 1


def test_what_orjson_refuses_is_read_by_the_standard_library() -> None:
    assert loads('"\\ud800"') == "\ud800"  # a lone surrogate escape
    assert math.isnan(loads("NaN"))
    assert loads("[1e400]") == [math.inf]
    assert loads('{"a": 1}'.encode("utf-16")) == {"a": 1}
