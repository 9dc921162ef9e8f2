"""Fast RFC 8785 (JCS) bytes for the journal's own records, byte-equal to ``rfc8785``.

The ``rfc8785`` package is the reference (``refusalkit.model.canonical_json``) but costs ~55 µs a
decision record, which would cap appends near 18k/s. Our records are trees of dicts and lists of
strings, booleans, null and integers. For exactly those values a JSON encoder with sorted keys,
compact separators, no ASCII escaping and the ES6 string escapes already writes the RFC 8785 bytes
(RFC 8785 §3.2.2: integers print the same, strings escape the same; §3.2.3: keys without
characters above U+FFFF sort the same by code point as by UTF-16 code unit). ``orjson`` is that
encoder when installed (~1 µs a record), else the standard library's C encoder.

The fast path is taken only when the encoder accepted the value (``orjson`` refuses integers beyond
±(2**53 - 1), non-string keys, lone surrogates and cycles), ``_plain`` proves it is such a tree
(exact types; one pass over the values) and its keys sort alike (all ASCII output, else
``_keys_sort_alike``: no key above U+FFFF). On the standard library path ``_plain`` also bounds
the integers and ``_keys_sort_alike`` always checks that keys are strings. Everything else
(floats, tuples, subclasses, enums, other types) goes to ``rfc8785``, which also decides the
error. Hypothesis tests (tests/journal/test_canonical.py) check every encoder byte for byte
against ``rfc8785``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from refusalkit.model import canonical_json

__all__ = ["ENCODERS", "FastEncoder", "canonical_bytes", "canonicalizer"]

_MAX_SAFE = 2**53 - 1  # RFC 8785 §3.2.2.3: integers beyond IEEE 754 exactness are not canonical
_NESTED = frozenset({dict, list})


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

    ``value`` must be acyclic (the encoder, which ran first, refuses cycles).
    """
    nested, todo = _NESTED, [value]
    for item in todo:  # grows while we walk it
        for member in item.values() if type(item) is dict else item:
            kind = type(member)
            if kind in scalars or (kind is int and -_MAX_SAFE <= member <= _MAX_SAFE):
                continue
            if kind not in nested:
                return False
            todo.append(member)
    return True


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


def _orjson_encoder() -> FastEncoder | None:
    """``orjson`` with sorted keys and the 53-bit integer limit, if it is installed."""
    try:
        import orjson  # noqa: PLC0415 (optional speed-up)
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    option = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
    dumps = orjson.dumps

    def encode(value: Any) -> bytes:
        # A right-sized copy: keeping orjson's own output objects (a batch keeps 1,000) made
        # each one cost ~5 µs more in heap page faults, the copy costs ~0.1 µs (measured).
        return bytes(memoryview(dumps(value, option=option)))

    return FastEncoder("orjson", encode, strict=True)


ENCODERS: tuple[FastEncoder, ...] = tuple(
    encoder for encoder in (_orjson_encoder(), _stdlib_encoder()) if encoder is not None
)
"""The fast encoders available here, best first (tests check each against ``rfc8785``)."""


def canonicalizer(encoder: FastEncoder) -> Callable[[Any], bytes]:
    """``canonical_bytes`` built on one fast encoder (falls back to ``rfc8785``)."""
    encode, strict = encoder.encode, encoder.strict
    scalars = frozenset({str, bool, type(None), *((int,) if strict else ())})

    def canonical(value: Any) -> bytes:
        """The RFC 8785 canonical UTF-8 bytes of a JSON value (fast path for plain records)."""
        if type(value) is dict or type(value) is list:
            try:
                data = encode(value)
            except (TypeError, ValueError, RecursionError):
                pass  # the reference decides: same bytes or the reference's error
            else:
                # an ASCII output has ASCII keys, and a strict encoder took only string keys
                keys_checked = strict and data.isascii()
                if _plain(value, scalars) and (keys_checked or _keys_sort_alike(value)):
                    return data
        return canonical_json(value)

    return canonical


canonical_bytes = canonicalizer(ENCODERS[0])
