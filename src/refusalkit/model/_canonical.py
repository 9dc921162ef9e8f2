"""Canonical JSON: RFC 8785 (JCS), the byte form that is hashed, signed, journaled and answered.

One encoder, two paths with one result:

- the reference, the ``rfc8785`` package (``_reference``), for any JSON value;
- a fast path for the values refusalkit writes most (decisions, requests, journal records):
  trees of exact ``dict``/``list`` holding ``str``, ``bool``, ``None`` and integers within
  ±(2**53 - 1). For exactly those values a JSON encoder with sorted keys, compact separators, no
  ASCII escaping and the ES6 string escapes already writes the RFC 8785 bytes (RFC 8785 §3.2.2:
  integers print the same, strings escape the same; §3.2.3: keys without characters above U+FFFF
  sort the same by code point as by UTF-16 code unit).

``orjson`` (a required dependency) is that encoder, ~1 µs a record against ~55 µs for the
reference; the standard library's C encoder is kept as a second fast encoder so that the
fast-path logic is tested against two independent encoders.

The fast path is taken only when a walk proves the value is such a tree: ``_plain_ascii`` for the
common case, every key an ASCII string (one pass, specialised for the shallow records and requests
the decision point digests), else ``_plain`` and ``_keys_sort_alike`` (keys without characters
above U+FFFF); and only when the encoder then accepts it (``orjson`` refuses lone surrogates and
nesting deeper than 255). Everything else (floats, tuples, subclasses, enums, other types, what an
encoder refuses) goes to the reference, which also decides the error. Hypothesis tests
(``tests/model/test_canonical.py``) check both encoders byte for byte against ``rfc8785``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

import orjson
import rfc8785

__all__ = ["canonical_json"]

_MAX_SAFE = 2**53 - 1  # RFC 8785 §3.2.2.3: integers beyond IEEE 754 exactness are not canonical
_NESTED = frozenset({dict, list})
_reference: Callable[[Any], bytes] = rfc8785.dumps


@dataclass(frozen=True, slots=True)
class FastEncoder:
    """A JSON encoder with sorted keys, compact separators, no ASCII escaping, ES6 escapes.

    ``strict``: it refuses integers beyond ±(2**53 - 1) and keys that are not strings itself
    (else ``_plain`` and ``_keys_sort_alike`` check them).
    """

    name: str
    encode: Callable[[Any], bytes]
    strict: bool


def _plain(value: dict[Any, Any] | list[Any], scalars: frozenset[type]) -> bool:
    """True when ``value`` holds only exact dict/list/str/int/bool/None values, integers within
    ±(2**53 - 1) unless ``int`` is in ``scalars`` (the encoder bounds them).

    Recursive, as ``_plain_ascii`` is: a cycle, or a value nested past the recursion limit,
    raises ``RecursionError`` at once rather than growing a work list without end.
    """
    nested = _NESTED
    for member in value.values() if type(value) is dict else value:
        kind = type(member)
        if kind in scalars or (kind is int and -_MAX_SAFE <= member <= _MAX_SAFE):
            continue
        if kind not in nested or not _plain(member, scalars):
            return False
    return True


def _plain_ascii(value: dict[Any, Any] | list[Any]) -> bool:
    """True when ``value`` is a tree of exact dict (ASCII ``str`` keys), list, str, bool, None and
    integers within ±(2**53 - 1). Recursive, with the first level of nesting inlined (a request's
    ``args`` and ``caller``); a value nested past the recursion limit raises ``RecursionError``."""
    if isinstance(value, dict):
        return _plain_dict(value)
    return _plain_list(value)


def _plain_dict(value: dict[Any, Any]) -> bool:
    for key in value:
        if type(key) is not str or not key.isascii():
            return False
    for item in value.values():
        if type(item) is str:
            continue
        if type(item) is dict:
            for key in item:
                if type(key) is not str or not key.isascii():
                    return False
            for inner in item.values():
                if type(inner) is not str and not _plain_item(inner):
                    return False
            continue
        if not _plain_item(item):
            return False
    return True


def _plain_item(item: Any) -> bool:
    kind = type(item)
    if kind is str or kind is bool or item is None:
        return True
    if kind is dict:
        return _plain_dict(item)
    if kind is int:
        safe: bool = -_MAX_SAFE <= item <= _MAX_SAFE
        return safe
    return kind is list and _plain_list(item)


def _plain_list(value: list[Any]) -> bool:
    return all(type(item) is str or _plain_item(item) for item in value)


def _keys_sort_alike(value: dict[Any, Any] | list[Any]) -> bool:
    """True when every key is a ``str`` without characters above U+FFFF: such keys sort the same
    by code point (the encoders) as by UTF-16 code unit (RFC 8785 §3.2.3). ``value`` is plain."""
    todo: list[Any] = [value]
    for item in todo:
        if type(item) is dict:
            try:
                keys = "".join(item)
            except TypeError:  # a key that is not a string
                return False
            if not keys.isascii() and max(keys) > "\uffff":
                return False
            todo.extend(item.values())
        elif type(item) is list:
            todo.extend(item)
    return True


def _stdlib_encoder() -> FastEncoder:
    """The standard library's C encoder. It writes non-string keys as strings and any integer,
    so ``_keys_sort_alike`` rejects those keys and ``_plain`` checks the integers."""

    def refuse(value: Any) -> Any:
        raise TypeError(f"{type(value).__name__} is not JSON")

    # positional, as json.encoder passes them: markers, default, encoder, indent,
    # key separator, item separator, sort_keys, skipkeys, allow_nan
    sort_keys, skip_keys, allow_nan = True, False, False
    chunks = c_make_encoder(
        None, refuse, encode_basestring, None, ":", ",", sort_keys, skip_keys, allow_nan
    )

    def encode(value: Any) -> bytes:
        return "".join(chunks(value, 0)).encode("utf-8")  # UnicodeEncodeError: lone surrogates

    return FastEncoder("stdlib", encode, strict=False)


def _orjson_encoder() -> FastEncoder:
    """``orjson`` with sorted keys and the 53-bit integer limit."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
    dumps = orjson.dumps

    def encode(value: Any) -> bytes:
        return dumps(value, option=option)

    return FastEncoder("orjson", encode, strict=True)


ENCODERS: tuple[FastEncoder, ...] = (_orjson_encoder(), _stdlib_encoder())
"""The fast encoders, best first (tests check each against ``rfc8785``)."""


def canonicalizer(encoder: FastEncoder) -> Callable[[Any], bytes]:
    """The canonical encoder built on one fast encoder (falls back to the reference)."""
    encode, strict = encoder.encode, encoder.strict
    scalars = frozenset({str, bool, type(None), *((int,) if strict else ())})

    def canonical(value: Any) -> bytes:
        if type(value) is dict or type(value) is list:
            try:
                fast = _plain_ascii(value) or (_plain(value, scalars) and _keys_sort_alike(value))
                if fast:
                    return encode(value)
            except (TypeError, ValueError, RecursionError):
                pass  # the reference decides: same bytes or the reference's error
        return _reference(value)

    return canonical


_canonical = canonicalizer(ENCODERS[0])


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value (UTF-8, sorted keys, ES6 numbers).

    >>> canonical_json({"b": [1, "é", None], "a": 1.0})
    b'{"a":1,"b":[1,"\\xc3\\xa9",null]}'

    A value RFC 8785 cannot encode (a lone surrogate, NaN, an integer beyond ±(2**53 - 1)) raises
    the ``rfc8785`` package's error.
    """
    return _canonical(value)
