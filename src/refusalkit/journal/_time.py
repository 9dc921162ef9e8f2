"""Time bounds of journal queries: RFC 3339 in, the journal's own form out
(docs/design/decision.md).

Decisions carry ``decided_at`` as RFC 3339 in UTC with milliseconds and a ``Z``
(``2026-05-02T14:07:22.123Z``); the journal indexes that text, so a bound compares correctly
only in the same form. ``normalise_time`` accepts an RFC 3339 §5.6 ``date-time`` (``Z`` or a
numeric offset, any fraction of a second) or a ``full-date`` (read as UTC midnight, or as the
day's last millisecond for an inclusive upper bound) and rejects anything else.
"""

from __future__ import annotations

import datetime as dt
import re

from refusalkit.errors import UsageError
from refusalkit.model import format_timestamp

__all__ = ["normalise_time"]

_RFC3339 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hms>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?"
    r"(?P<zone>[Zz]|[+-]\d{2}:\d{2}))?",
    re.ASCII,
)


def _parse(value: str, end_of_day: bool) -> dt.datetime:
    """The moment ``value`` names; ValueError when it is not RFC 3339."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise ValueError(value)
    day = dt.date.fromisoformat(match["date"])
    if match["hms"] is None:
        moment = dt.time(23, 59, 59, 999_000) if end_of_day else dt.time()
        return dt.datetime.combine(day, moment, dt.UTC)
    micro = int((match["frac"] or "").ljust(6, "0")[:6])
    zone = match["zone"].upper()
    offset = "+00:00" if zone == "Z" else zone
    clock = dt.time.fromisoformat(f"{match['hms']}.{micro:06d}{offset}")
    return dt.datetime.combine(day, clock)


_FIRST = "0001-01-01T00:00:00.000Z"
_LAST = "9999-12-31T23:59:59.999Z"


def _in_range(moment: dt.datetime) -> str:
    """``moment`` in UTC; an offset time that falls before year 1 or after 9999 in UTC (e.g.
    ``0001-01-01T00:30:00+01:00``) is the first or last millisecond a timestamp can hold, so
    every year RFC 3339 §5.6 allows is a valid bound."""
    try:
        return format_timestamp(moment)
    except OverflowError:
        return _FIRST if moment.year == 1 else _LAST


def normalise_time(value: str, *, name: str = "time", end_of_day: bool = False) -> str:
    """``value`` (RFC 3339 date-time or full-date) as UTC ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    A full-date is UTC midnight, or with ``end_of_day`` (for an inclusive upper bound) the last
    millisecond of that day. Fractions beyond milliseconds are truncated. Raises ``UsageError``
    (exit 2) naming ``name`` for anything else, e.g. ``yesterday`` or a time without an offset.
    """
    try:
        return _in_range(_parse(value.strip(), end_of_day))
    except (ValueError, OverflowError) as exc:
        raise UsageError(
            f"{name} {value!r} is not an RFC 3339 time",
            hint="Write e.g. 2026-05-02T14:07:22Z, 2026-05-02T16:07:22+02:00 or 2026-05-02.",
        ) from exc
