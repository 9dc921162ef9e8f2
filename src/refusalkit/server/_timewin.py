"""Time windows of queries: RFC 3339 bounds, or ``last=15m|24h|7d`` back from now."""

from __future__ import annotations

import datetime as dt
import re

from refusalkit.model import format_timestamp, now_utc
from refusalkit.server._errors import ApiError, ErrorCode

__all__ = ["normalise_time", "window"]

_DURATION = re.compile(r"^(\d{1,6})([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def normalise_time(value: str | None, name: str) -> str | None:
    """An RFC 3339 time as the journal writes it (UTC, milliseconds, ``Z``); 422 when invalid."""
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ApiError(
            422,
            ErrorCode.INVALID_REQUEST,
            f"`{name}` is not an RFC 3339 time with an offset",
            "Write e.g. 2026-05-02T14:07:22Z.",
        )
    return format_timestamp(moment)


def window(since: str | None, until: str | None, last: str | None) -> tuple[str | None, str | None]:
    """The ``(since, until)`` bounds of a query."""
    if last is not None:
        match = _DURATION.match(last)
        if match is None or since is not None:
            raise ApiError(
                422,
                ErrorCode.INVALID_REQUEST,
                "`last` must be a duration like 15m, 24h or 7d, and excludes `since`",
                "Pass either since=RFC3339 or last=DURATION.",
            )
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
        since = format_timestamp(now_utc() - dt.timedelta(seconds=seconds))
        return since, normalise_time(until, "until")
    return normalise_time(since, "since"), normalise_time(until, "until")
