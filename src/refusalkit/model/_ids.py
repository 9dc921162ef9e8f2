"""Time-ordered identifiers and timestamps for decisions.

UUIDv7 (RFC 9562 §5.7): 48 bits of Unix milliseconds, then random bits, so ids sort by time.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid

__all__ = ["format_timestamp", "now_utc", "uuid7"]


def uuid7(unix_ms: int | None = None) -> str:
    """A new UUIDv7 string (RFC 9562 §5.7)."""
    ms = time.time_ns() // 1_000_000 if unix_ms is None else unix_ms
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a, 12 bits
    value |= 0b10 << 62  # variant
    value |= rand & 0x3FFF_FFFF_FFFF_FFFF  # rand_b, 62 bits
    return str(uuid.UUID(int=value))


def now_utc() -> dt.datetime:
    """The current time in UTC."""
    return dt.datetime.now(dt.UTC)


def format_timestamp(moment: dt.datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a ``Z`` (docs/design/decision.md)."""
    utc = moment.astimezone(dt.UTC)
    # strftime's %Y does not pad years below 1000 on every platform; RFC 3339 §5.6 needs four
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
