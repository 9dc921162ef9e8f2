"""Query time bounds: RFC 3339 in any offset becomes the indexed form of ``decided_at``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.errors import UsageError
from refusalkit.journal import normalise_time, open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import format_timestamp

DecisionMaker = Callable[..., dict[str, Any]]

_offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
    lambda m: dt.timezone(dt.timedelta(minutes=m))
)
_moments = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=_offsets
)


@settings(max_examples=200)
@given(_moments, st.sampled_from(["T", "t", " "]), st.booleans())
def test_any_offset_normalises_to_the_same_utc_instant(
    moment: dt.datetime, separator: str, zulu: bool
) -> None:
    text = moment.isoformat(sep=separator, timespec="microseconds")
    if zulu:
        moment = moment.astimezone(dt.UTC)
        text = moment.replace(tzinfo=None).isoformat(sep=separator) + "Z"
    assert normalise_time(text) == format_timestamp(moment)
    assert normalise_time(normalise_time(text)) == normalise_time(text)


def test_examples() -> None:
    assert normalise_time("2026-11-30T15:00:00+01:00") == "2026-11-30T14:00:00.000Z"
    assert normalise_time("2026-11-30T15:00:00.123456789z") == "2026-11-30T15:00:00.123Z"
    assert normalise_time("2026-11-30T00:30:00-01:00") == "2026-11-30T01:30:00.000Z"
    assert normalise_time("2026-11-30") == "2026-11-30T00:00:00.000Z"
    assert normalise_time("2026-11-30", end_of_day=True) == "2026-11-30T23:59:59.999Z"


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "",
        "2026-11-30T15:00:00",  # no offset: ambiguous
        "2026-11-30T15:00Z",  # no seconds
        "2026-13-01",
        "2026-02-30",
        "2026-11-30T24:00:00Z",
        "2026-11-30T15:00:00+24:00",
        "20261130T150000Z",
        "2026-11-30T15:00:00+0100",
        "2026-11-30T15:00:00Z trailing",
    ],
)
def test_rejects_everything_else(text: str) -> None:
    with pytest.raises(UsageError, match=r"--since .* is not an RFC 3339 time") as failed:
        normalise_time(text, name="--since")
    assert failed.value.exit_code == 2
    assert failed.value.hint


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("0999-12-31", "0999-12-31T00:00:00.000Z"),
        ("0001-01-01", "0001-01-01T00:00:00.000Z"),
        ("0042-06-01T12:00:00Z", "0042-06-01T12:00:00.000Z"),
        ("0001-01-01T00:30:00+01:00", "0001-01-01T00:00:00.000Z"),  # before year 1 in UTC
        ("9999-12-31T23:30:00-01:00", "9999-12-31T23:59:59.999Z"),  # after 9999 in UTC
    ],
)
def test_every_year_from_0001_to_9999_is_a_bound(text: str, wanted: str) -> None:
    # strftime's %Y wrote 999, not 0999: a value the parser then refused as self-made garbage
    assert normalise_time(text) == wanted
    assert normalise_time(normalise_time(text)) == wanted


def test_early_years_query_the_journal(
    tmp_path: Any, keyring: Keyring, decision: DecisionMaker
) -> None:
    with open_journal(tmp_path / "j.db", keyring) as journal:
        journal.append([decision(0)])
        assert journal.stats(since="0001-01-01")["total"] == 1
        assert journal.stats(since="0999-12-31", until="0999-12-31")["total"] == 0
        assert [i for i, _ in journal.query(until="9999-12-31")] == [0]


def test_query_and_stats_compare_instants_not_strings(
    tmp_path: Any, keyring: Keyring, decision: DecisionMaker
) -> None:
    # decision(i) is decided at 2026-05-02T14:MM:SS.000Z with i = 60*MM + SS
    with open_journal(tmp_path / "j.db", keyring) as journal:
        journal.append([decision(i) for i in range(0, 600, 60)])  # 14:00 ... 14:09
        since = [i for i, _ in journal.query(since="2026-05-02T16:05:00+02:00")]
        assert since == [5, 6, 7, 8, 9]
        until = [i for i, _ in journal.query(until="2026-05-02T09:02:00-05:00")]
        assert until == [0, 1, 2]
        assert journal.stats(since="2026-05-02", until="2026-05-02")["total"] == 10
        assert journal.stats(until="2026-05-01")["total"] == 0
        with pytest.raises(UsageError):
            journal.stats(since="yesterday")
