"""Decision ids and timestamps from one clock reading (docs/design/decision.md).

``stamp()`` gives a UUIDv7 (RFC 9562 §5.7) and the matching RFC 3339 text of the same
millisecond, exactly as ``refusalkit.model.uuid7`` and ``format_timestamp`` would lay them out.
It is the hot path's twin of those two: the time parts are recomputed once per millisecond and the
random parts come from a pool filled by one ``os.urandom`` read per 256 ids.
``tests/decide/test_stamps.py`` pins it to RFC 9562's layout and to ``format_timestamp``.
"""

from __future__ import annotations

import datetime as dt
import os
import time

from refusalkit.model import format_timestamp

__all__ = ["stamp"]

_BATCH = 256
_WIDTH = 23  # a tail's 22 characters and the space that ``split`` cuts at
# a hex digit's variant character (``89ab`` by its low two bits: variant 10, RFC 9562 §4.1)
_VARIANT = bytes.maketrans(b"0123456789abcdef", b"89ab" * 4)
# which of its 20 random hex digits each hex position of a tail takes (the fourth digit gives
# the variant character, at 5; 0, 4 and 9 hold ``7``, ``-``, ``-``)
_DIGITS = {1: 0, 2: 1, 3: 2, 6: 4, 7: 5, 8: 6, **{at: at - 3 for at in range(10, 22)}}
_pool: list[str] = []  # ready-made random UUID tails; list.pop is atomic, so threads share it
os.register_at_fork(after_in_child=_pool.clear)  # a forked child must not reuse the parent's


def _tails() -> list[str]:
    """Random ``7xxx-yxxx-xxxxxxxxxxxx`` tails (version 7, variant 10) from one read.

    Tail ``k`` is written from the hex digits ``20k`` to ``20k + 19`` of the read, one strided
    copy per character position for all tails at once, so no Python code runs per tail but the
    final ``split``.
    """
    digits = os.urandom(10 * _BATCH).hex().encode("ascii")
    out = bytearray(b" " * (_WIDTH * _BATCH))
    out[0::_WIDTH] = b"7" * _BATCH
    out[4::_WIDTH] = out[9::_WIDTH] = b"-" * _BATCH
    out[5::_WIDTH] = digits[3::20].translate(_VARIANT)
    for at, digit in _DIGITS.items():
        out[at::_WIDTH] = digits[digit::20]
    return out.decode("ascii").split()


def _time_parts(ms: int) -> tuple[int, str, str]:
    """``(ms, UUIDv7 time prefix, RFC 3339 text)`` of a Unix millisecond."""
    prefix = f"{ms >> 16 & 0xFFFF_FFFF:08x}-{ms & 0xFFFF:04x}-"
    text = format_timestamp(dt.datetime.fromtimestamp(ms / 1000, dt.UTC))
    return ms, prefix, text


_now: tuple[int, str, str] = _time_parts(0)  # replaced whole, so readers see one consistent ms


def stamp() -> tuple[str, str]:
    """A new UUIDv7 string and ``format_timestamp`` of the same millisecond."""
    global _now  # noqa: PLW0603 (a per-millisecond cache, replaced atomically)
    ms = time.time_ns() // 1_000_000
    now = _now
    if now[0] != ms:
        now = _now = _time_parts(ms)
    try:
        tail = _pool.pop()
    except IndexError:  # this caller's id comes from its own read: other threads may empty the
        fresh = _tails()  # pool between an ``extend`` and a ``pop`` (8 callers do, at 100k/s)
        tail = fresh.pop()
        _pool.extend(fresh)
    return now[1] + tail, now[2]
