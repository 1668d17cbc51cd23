"""The hot-path JSON of ``reversi_core._json``: encoded as exactly as the standard library."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from reversi_core._json import dumps, dumps_text, loads

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


def test_integers_over_64_bits_stay_exact_both_ways() -> None:
    big = 2**70 + 1
    assert loads(b'{"n": 1180591620717411303425}') == {"n": big}
    assert loads(dumps({"n": big})) == {"n": big}
    assert loads('{"n": 18446744073709551617}')["n"] == 2**64 + 1


def test_what_orjson_cannot_encode_is_encoded_by_the_standard_library() -> None:
    assert loads(dumps("caf\udce9")) == "caf\udce9"  # a lone surrogate, spelled in ASCII
    assert dumps_text({"s": "caf\udce9"}) == '{"s":"caf\\udce9"}'
    assert dumps({1: "a"}) == b'{"1":"a"}'
    assert dumps({"é": "ü"}).decode("utf-8") == '{"é":"ü"}'


def test_a_float_that_is_not_a_number_has_no_json_spelling() -> None:
    assert dumps([math.nan, math.inf]) == b"[null,null]"
