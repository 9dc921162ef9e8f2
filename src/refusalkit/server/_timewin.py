"""Time windows of queries: RFC 3339 bounds, or ``last=15m|24h|7d`` back from now."""

from __future__ import annotations

import datetime as dt
import re

from refusalkit.errors import UsageError
from refusalkit.journal import normalise_time as journal_time
from refusalkit.model import format_timestamp, now_utc
from refusalkit.server._errors import ApiError, ErrorCode

__all__ = ["query_time", "window"]

_DURATION = re.compile(r"^(\d{1,6})([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def query_time(value: str | None, name: str) -> str | None:
    """An RFC 3339 time (or date) as the journal writes it, via the journal's own parser; 422."""
    if value is None:
        return None
    try:
        return journal_time(value, name=name, end_of_day=name == "until")
    except UsageError as exc:
        raise ApiError(422, ErrorCode.INVALID_REQUEST, exc.message, exc.hint) from exc


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
        try:
            since = format_timestamp(now_utc() - dt.timedelta(seconds=seconds))
        except OverflowError as exc:  # before year 1: a client's mistake, not an incident
            raise ApiError(
                422,
                ErrorCode.INVALID_REQUEST,
                f"`last` reaches back before year 1 ({last})",
                "Pass a shorter duration, or since=RFC3339.",
            ) from exc
        return since, query_time(until, "until")
    return query_time(since, "since"), query_time(until, "until")
