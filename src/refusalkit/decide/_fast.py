"""Hot-path helpers with exactly the results of the model's slower general functions.

- ``canonical_bytes``: RFC 8785 bytes. For the common case (strings, booleans, null, safe
  integers, ASCII keys; exact built-in types only) a sorted-key JSON encoder already emits the
  JCS form (JCS §3.2.2: escapes only ``"``, ``\\`` and controls, lower-case ``\\u00xx``; key
  order by UTF-16 units, which equals code point order for ASCII). ``orjson`` (a core
  dependency) is used for that; ``json``'s C encoder stays as a cheap fallback for an install
  without it (both are checked against ``rfc8785`` in the tests); anything else goes to
  ``rfc8785``.
- ``stamp``: a UUIDv7 (RFC 9562 §5.7) and the matching ``format_timestamp`` text, both from one
  clock reading; the time parts are recomputed once per millisecond and the random parts come
  from a pool filled by one ``os.urandom`` read per 256 ids.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import json.encoder
import os
import time
from collections.abc import Callable
from typing import Any

from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json, format_timestamp

__all__ = [
    "Clock",
    "FastMac",
    "canonical_bytes",
    "encode_json",
    "encode_orjson",
    "encode_plain",
    "fast_uuid7",
    "plain",
    "stamp",
]

_SAFE = 2**53 - 1
_BLOCK = 64  # SHA-256 block size in bytes (RFC 2104 §2: B)


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


# The C encoder that ``json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",",
# ":"), allow_nan=False).encode`` builds on every call, built once (no circularity check:
# RecursionError on a cyclic value, which fails the decision closed).
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
if _c_make_encoder is not None:
    sort_keys, skip_keys, allow_nan = True, False, False
    _encode_chunks = _c_make_encoder(
        None,
        _refuse,
        json.encoder.encode_basestring,
        None,
        ":",
        ",",
        sort_keys,
        skip_keys,
        allow_nan,
    )
else:  # pragma: no cover (CPython always has the C encoder)
    _encode_chunks = json.JSONEncoder(
        ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    ).iterencode


def encode_json(value: Any) -> bytes:
    """Sorted-key compact JSON by ``json``'s C encoder (JCS bytes for a ``plain`` value)."""
    return "".join(_encode_chunks(value, 0)).encode("utf-8")


def _orjson_encoder() -> Callable[[Any], bytes] | None:
    """``orjson``'s sorted-key encoder; None if it is missing (it is a core dependency)."""
    try:
        import orjson  # noqa: PLC0415 (guarded: the json fallback keeps the results the same)
    except ImportError:  # pragma: no cover (exercised when orjson is not installed)
        return None
    dumps = orjson.dumps
    options = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER

    def encode_orjson(value: Any) -> bytes:
        """Sorted-key compact JSON by ``orjson`` (JCS bytes for a ``plain`` value)."""
        return dumps(value, option=options)

    return encode_orjson


encode_orjson = _orjson_encoder()
# The encoder of ``plain`` values: JCS bytes by ``orjson``, else (not installed) by ``json``.
encode_plain: Callable[[Any], bytes] = encode_orjson or encode_json


def _plain_dict(value: dict[Any, Any]) -> bool:
    for key in value:
        if type(key) is not str or not key.isascii():
            return False
    for item in value.values():
        if type(item) is str:
            continue
        if type(item) is dict:  # one level inline: a request's args and caller, mostly strings
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
        safe: bool = -_SAFE <= item <= _SAFE
        return safe
    return kind is list and _plain_list(item)


def _plain_list(value: list[Any]) -> bool:
    return all(type(item) is str or _plain_item(item) for item in value)


def plain(value: Any) -> bool:
    """True when a sorted-key JSON encoder gives exactly the RFC 8785 bytes of ``value``.

    That is: only exact ``dict`` (ASCII ``str`` keys), ``list``, ``str``, ``bool``, ``None`` and
    integers within ±(2**53 - 1) (no floats: their JCS form is ECMAScript's, not Python's).
    """
    return _plain_dict(value) if type(value) is dict else _plain_item(value)


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of ``value`` (same result as ``canonical_json``).

    A value that ``canonical_json`` refuses is refused with its error (lone surrogates, say).
    """
    if plain(value):
        try:
            return encode_plain(value)
        except Exception:  # noqa: BLE001, S110 (rfc8785 below raises its own error)
            pass
    return canonical_json(value)


# -- decision ids and timestamps ----------------------------------------------------------------

_VARIANT = "89ab" * 4
_BATCH = 256
_pool: list[str] = []  # ready-made random UUID tails; list.pop is atomic, so threads share it
os.register_at_fork(after_in_child=_pool.clear)  # a forked child must not reuse the parent's


def _tails() -> list[str]:
    """Random ``7xxx-yxxx-xxxxxxxxxxxx`` tails (version 7, variant 10) from one read."""
    h = os.urandom(10 * _BATCH).hex()
    return [
        f"7{h[i : i + 3]}-{_VARIANT[int(h[i + 3], 16)]}{h[i + 4 : i + 7]}-{h[i + 7 : i + 19]}"
        for i in range(0, 20 * _BATCH, 20)
    ]


def _time_parts(ms: int) -> tuple[int, str, str]:
    """``(ms, UUIDv7 time prefix, RFC 3339 text)`` of a Unix millisecond."""
    prefix = f"{ms >> 16 & 0xFFFF_FFFF:08x}-{ms & 0xFFFF:04x}-"
    text = format_timestamp(dt.datetime.fromtimestamp(ms / 1000, dt.UTC))
    return ms, prefix, text


_now: tuple[int, str, str] = _time_parts(0)  # replaced whole, so readers see one consistent ms


def stamp() -> tuple[str, str]:
    """A new UUIDv7 string and ``format_timestamp`` of the same millisecond
    (docs/design/decision.md)."""
    global _now  # noqa: PLW0603 (a per-millisecond cache, replaced atomically)
    ms = time.time_ns() // 1_000_000
    now = _now
    if now[0] != ms:
        now = _now = _time_parts(ms)
    try:
        tail = _pool.pop()
    except IndexError:
        _pool.extend(_tails())
        tail = _pool.pop()
    return now[1] + tail, now[2]


def fast_uuid7() -> str:
    """A UUIDv7 string (RFC 9562 §5.7): 48-bit Unix ms, version 7, variant 10, 74 random bits."""
    return stamp()[0]


class Clock:
    """``format_timestamp(now)`` for the current millisecond, cached per millisecond."""

    __slots__ = ()

    def now(self) -> str:
        """The current time as RFC 3339 UTC with milliseconds (docs/design/decision.md)."""
        ms = time.time_ns() // 1_000_000
        now = _now if _now[0] == ms else _time_parts(ms)
        return now[2]


class FastMac:
    """Redaction tokens and digests exactly as ``Redactor`` makes them (docs/design/decision.md).

    HMAC-SHA256 as RFC 2104 §2 defines it, H((K ^ opad) || H((K ^ ipad) || text)), with the two
    keyed SHA-256 states prepared once and copied for each value (two hash copies instead of a
    whole HMAC object). ``tests/decide/test_records.py`` checks every token and digest against
    ``Redactor`` and ``hmac``.
    """

    __slots__ = ("_digest_prefix", "_inner", "_outer", "_redactor", "_token_prefix", "key_id")

    def __init__(self, keyring: Keyring) -> None:
        self._redactor = keyring.redactor()
        self.key_id = self._redactor.key_id
        key = keyring.redaction_keys[self.key_id]
        if len(key) > _BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner: Any = hashlib.sha256(bytes(b ^ 0x36 for b in key)).copy
        self._outer: Any = hashlib.sha256(bytes(b ^ 0x5C for b in key)).copy
        self._digest_prefix = f"hmac-sha256:{self.key_id}:"
        self._token_prefix = f"<redacted:hmac-sha256:{self.key_id}:"

    def digest(self, data: bytes) -> str:
        """``hmac-sha256:{key_id}:{hex}`` of ``data`` (same as ``Redactor.digest``)."""
        inner = self._inner()
        inner.update(data)
        outer = self._outer()
        outer.update(inner.digest())
        text: str = outer.hexdigest()
        return self._digest_prefix + text

    def token(self, field_class: str, value: Any) -> str:
        """The redaction token of ``value`` (same as ``Redactor.token``)."""
        if type(value) is not str:
            return self._redactor.token(field_class, value)
        inner = self._inner()
        inner.update(f"{field_class}\x00{value}".encode())
        outer = self._outer()
        outer.update(inner.digest())
        text: str = outer.hexdigest()
        return self._token_prefix + text[:16] + ">"
