"""Hot-path helpers with exactly the results of the model's slower general functions.

- ``canonical_bytes``: RFC 8785 bytes. For the common case (strings, booleans, null, safe
  integers, ASCII keys) ``json``'s C encoder with sorted keys already emits the JCS form (JCS
  §3.2.2: escapes only ``"``, ``\\`` and controls, lower-case ``\\u00xx``; key order by UTF-16
  units, which equals code point order for ASCII); anything else goes to ``rfc8785``.
- ``Clock``: ``format_timestamp`` output, recomputed once per millisecond.
- ``fast_uuid7``: RFC 9562 §5.7 UUIDv7 strings from buffered randomness.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import json.encoder
import os
import threading
import time
from typing import Any

from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json, format_timestamp

__all__ = ["Clock", "FastMac", "canonical_bytes", "fast_uuid7"]

_SAFE = 2**53 - 1


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


def _encode(value: Any) -> str:
    return "".join(_encode_chunks(value, 0))


def _plain_dict(value: dict[Any, Any]) -> bool:
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if not _plain_other(item, kind):
            return False
    return True


def _plain_other(value: Any, kind: type) -> bool:
    if kind is dict:
        return _plain_dict(value)
    if kind is int:
        safe: bool = -_SAFE <= value <= _SAFE
        return safe
    if kind is list:
        for item in value:
            sub = type(item)
            if not (sub is str or sub is bool or item is None or _plain_other(item, sub)):
                return False
        return True
    return False


def _plain(value: Any) -> bool:
    """True when ``json``'s encoder gives exactly the RFC 8785 bytes of ``value``."""
    kind = type(value)
    return kind is str or kind is bool or value is None or _plain_other(value, kind)


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of ``value`` (same result as ``canonical_json``)."""
    if _plain(value):
        return _encode(value).encode("utf-8")
    return canonical_json(value)


class Clock:
    """``format_timestamp(now)`` for the current millisecond, cached per millisecond."""

    __slots__ = ("_ms", "_text")

    def __init__(self) -> None:
        self._ms = -1
        self._text = ""

    def now(self) -> str:
        """The current time as RFC 3339 UTC with milliseconds (DESIGN.md §1)."""
        ms = time.time_ns() // 1_000_000
        if ms != self._ms:
            moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
            self._text = format_timestamp(moment)
            self._ms = ms
        return self._text


_VARIANT = "89ab" * 4
_BATCH = 64


class _Randomness(threading.local):
    """Per thread: ready-made random UUID tails, and the time prefix of the current ms."""

    def __init__(self) -> None:
        self.tails: list[str] = []
        self.ms = -1
        self.prefix = ""


_random = _Randomness()


def _tails() -> list[str]:
    """64 random ``7xxx-yxxx-xxxxxxxxxxxx`` tails (version 7, variant 10) from one read."""
    h = os.urandom(10 * _BATCH).hex()
    return [
        f"7{h[i : i + 3]}-{_VARIANT[int(h[i + 3], 16)]}{h[i + 4 : i + 7]}-{h[i + 7 : i + 19]}"
        for i in range(0, 20 * _BATCH, 20)
    ]


def fast_uuid7() -> str:
    """A UUIDv7 string (RFC 9562 §5.7): 48-bit Unix ms, version 7, variant 10, 74 random bits."""
    state = _random
    tails = state.tails
    if not tails:
        tails = state.tails = _tails()
    ms = time.time_ns() // 1_000_000
    if ms != state.ms:
        state.ms = ms
        state.prefix = f"{ms >> 16 & 0xFFFF_FFFF:08x}-{ms & 0xFFFF:04x}-"
    return state.prefix + tails.pop()


class FastMac:
    """Redaction tokens and digests exactly as ``Redactor`` makes them (DESIGN.md §1), with the
    keyed HMAC-SHA256 state prepared once and copied at C level for each value.

    Falls back to the ``Redactor`` when the platform's ``hmac`` has no C state to copy.
    ``tests/decide/test_engine.py`` checks every token and digest against ``Redactor``.
    """

    __slots__ = ("_base", "_redactor", "key_id")

    def __init__(self, keyring: Keyring) -> None:
        self._redactor = keyring.redactor()
        self.key_id = self._redactor.key_id
        key = keyring.redaction_keys[self.key_id]
        self._base: Any = getattr(hmac.new(key, digestmod=hashlib.sha256), "_hmac", None)

    def digest(self, data: bytes) -> str:
        """``hmac-sha256:{key_id}:{hex}`` of ``data`` (same as ``Redactor.digest``)."""
        if self._base is None:
            return self._redactor.digest(data)
        mac = self._base.copy()
        mac.update(data)
        return f"hmac-sha256:{self.key_id}:{mac.hexdigest()}"

    def token(self, field_class: str, value: Any) -> str:
        """The redaction token of ``value`` (same as ``Redactor.token``)."""
        if self._base is None or type(value) is not str:
            return self._redactor.token(field_class, value)
        mac = self._base.copy()
        mac.update(f"{field_class}\x00{value}".encode())
        return f"<redacted:hmac-sha256:{self.key_id}:{mac.hexdigest()[:16]}>"
