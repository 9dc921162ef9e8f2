"""``canonical_json`` and its fast encoders are byte-equal to the ``rfc8785`` reference.

Both fast encoders (``orjson`` and the standard library's) are checked,
on plain records (the fast path) and on values that must fall back: floats, tuples, enums, UUIDs,
subclasses, non-string and astral keys, integers beyond 2**53, lone surrogates, cycles.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from refusalkit.model import canonical_json
from refusalkit.model._canonical import ENCODERS, canonicalizer
from support.strategies import json_values, plain_json

Canonical = Callable[[Any], bytes]


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Kind(enum.StrEnum):
    DECISION = "decision"


class Record(dict[str, Any]):
    """A dict subclass."""


class Text(str):
    """A str subclass."""

    __slots__ = ()


_each_encoder = pytest.mark.parametrize(
    "canonical", [canonicalizer(e) for e in ENCODERS], ids=[e.name for e in ENCODERS]
)


def _reference(value: Any) -> bytes | type[Exception]:
    try:
        return bytes(rfc8785.dumps(value))
    except Exception as exc:
        return type(exc)


def _check(canonical: Canonical, value: Any) -> None:
    expected = _reference(value)
    if isinstance(expected, bytes):
        assert canonical(value) == expected
    else:
        with pytest.raises(expected):
            canonical(value)


_odd = st.sampled_from(
    [
        Colour.RED,
        Level.HIGH,
        Kind.DECISION,
        uuid.UUID(int=7),
        Text("t"),
        b"bytes",
        float("nan"),
        float("inf"),
        2**53,
        -(2**53),
        2**53 - 1,
        -(2**53) + 1,
        2**64,
        "\ud800",
    ]
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_keys = st.text(max_size=8) | st.sampled_from(
    ["schema", "a", "é", "\U0001f600", "\ue000", "\uffff", "z", "\ud800", "1"]
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(_keys, inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(_keys, inner, max_size=3).map(Record)
    ),
    max_leaves=30,
)
_anything = json_values(
    _scalars | _odd, keys=_keys | st.integers(0, 3) | st.none(), max_size=4, max_leaves=20
)


@_each_encoder
@settings(max_examples=200, deadline=None)
@given(_json)
def test_byte_equal_to_rfc8785(canonical: Canonical, value: Any) -> None:
    _check(canonical, value)


@_each_encoder
@settings(max_examples=200, deadline=None)
@given(_anything)
@example({"a": Colour.RED})
@example({"a": uuid.UUID(int=1)})
@example({"n": [float("nan")]})
@example({1: "x"})
@example({"\U0001f600": 1, "\ue000": 2})
@example({"big": 2**53})
@example({"a": "\ud800"})
def test_same_bytes_or_same_error_on_odd_values(canonical: Canonical, value: Any) -> None:
    _check(canonical, value)


_plain = plain_json


@_each_encoder
@settings(max_examples=200, deadline=None)
@given(_plain)
def test_byte_equal_on_the_fast_path(canonical: Canonical, value: Any) -> None:
    assert canonical(value) == rfc8785.dumps(value)


def _loop(key: Any) -> dict[Any, Any]:
    """A dict that holds itself, through a list, under ``key``."""
    loop: dict[Any, Any] = {key: []}
    loop[key].append(loop)
    return loop


@_each_encoder
@pytest.mark.timeout(20)  # a walk that follows the cycle without end would hang here
@pytest.mark.parametrize("key", ["self", "é", "\U0001f600", 1])
def test_cycles_fail_like_the_reference(canonical: Canonical, key: Any) -> None:
    _check(canonical, _loop(key))


def test_known_forms() -> None:
    assert (
        canonical_json({"b": [1, "é", None], "a": True}) == '{"a":true,"b":[1,"é",null]}'.encode()
    )
    assert canonical_json({"x": 1.0, "y": 1e21}) == b'{"x":1,"y":1e+21}'
    assert canonical_json({"c": "\u2028\x1f"}) == b'{"c":"\xe2\x80\xa8\\u001f"}'
    # RFC 8785 §3.2.3: UTF-16 order puts U+1F600 (D83D DE00) before U+E000
    assert canonical_json({"\ue000": 1, "\U0001f600": 2}) == rfc8785.dumps(
        {"\U0001f600": 2, "\ue000": 1}
    )


DECISION = {
    "schema": "refusalkit.decision/v1",
    "decision_id": "0193f1c2-0000-7000-8000-000000000005",
    "action": "deny",
    "reason_code": "policy-denied",
    "reason_codes_version": 1,
    "retryable": False,
    "why_trail": [{"rule": "r", "matched": True, "value": "<redacted:hmac-sha256:k1:00>"}],
    "subject": {"agent": "coder", "session": None},
}


def test_plain_records_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def reference(value: Any) -> bytes:
        raise AssertionError("the rfc8785 reference was called")

    monkeypatch.setattr("refusalkit.model._canonical._reference", reference)
    for encoder in ENCODERS:
        canonical = canonicalizer(encoder)
        assert canonical(DECISION) == rfc8785.dumps(DECISION)
        assert canonical({"text": "é ✓ \U0001f600", "n": [2**53 - 1, None]})
        with pytest.raises(AssertionError):  # a float is not plain: the reference decides
            canonical({"x": 1.5})
