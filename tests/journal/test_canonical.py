"""The fast canonical encoder is byte-equal to the ``rfc8785`` reference on any JSON value."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.journal import canonical_bytes

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_keys = st.text(max_size=8) | st.sampled_from(["schema", "a", "é", "\U0001f600", "\ue000", "z"])
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=30,
)


def _reference(value: Any) -> bytes | type[Exception]:
    try:
        return bytes(rfc8785.dumps(value))
    except Exception as exc:
        return type(exc)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_byte_equal_to_rfc8785(value: Any) -> None:
    expected = _reference(value)
    if isinstance(expected, bytes):
        assert canonical_bytes(value) == expected
    else:
        with pytest.raises(expected):
            canonical_bytes(value)


_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(st.characters(max_codepoint=127), max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(_plain)
def test_byte_equal_on_the_fast_path(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_known_forms() -> None:
    assert (
        canonical_bytes({"b": [1, "é", None], "a": True}) == '{"a":true,"b":[1,"é",null]}'.encode()
    )
    assert canonical_bytes({"x": 1.0, "y": 1e21}) == b'{"x":1,"y":1e+21}'
    assert canonical_bytes({"c": "\u2028\x1f"}) == b'{"c":"\xe2\x80\xa8\\u001f"}'
