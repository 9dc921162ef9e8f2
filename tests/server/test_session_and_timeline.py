"""Dashboard session cookies (signed, expiring, bound to a key) and the timeline chart's buckets."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.keyring import Keyring
from refusalkit.model import ReasonCode, format_timestamp
from refusalkit.server._dashboard import timeline
from refusalkit.server._session import SessionSigner


def test_a_session_cookie_round_trips_and_binds_the_key() -> None:
    signer = SessionSigner(Keyring.generate())
    claims = signer.read(signer.issue("viewer", "sha256:" + "ab" * 32))
    assert claims is not None
    assert claims.name == "viewer"
    assert ("sha256:" + "ab" * 32).endswith(claims.key_hash)


def test_another_keyring_does_not_accept_the_cookie() -> None:
    cookie = SessionSigner(Keyring.generate()).issue("viewer", "sha256:00")
    assert SessionSigner(Keyring.generate()).read(cookie) is None


def test_an_expired_cookie_is_refused() -> None:
    signer = SessionSigner(Keyring.generate(), lifetime_s=-1)
    assert signer.read(signer.issue("viewer", "sha256:00")) is None


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0), st.characters(codec="ascii", categories=("L", "N")))
def test_any_altered_cookie_is_refused(position: int, replacement: str) -> None:
    signer = SessionSigner(Keyring.generate())
    cookie = signer.issue("viewer", "sha256:" + "cd" * 32)
    at = position % len(cookie)
    altered = cookie[:at] + replacement + cookie[at + 1 :]
    if altered != cookie:
        assert signer.read(altered) is None


NOW = dt.datetime(2026, 5, 2, 14, 0, tzinfo=dt.UTC)
codes = st.sampled_from([c.value for c in ReasonCode])
ages = st.integers(min_value=0, max_value=24 * 3600)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(ages, codes), max_size=200))
def test_timeline_bars_count_every_refusal_once(points: list[tuple[int, str]]) -> None:
    data = [(format_timestamp(NOW - dt.timedelta(seconds=age)), code) for age, code in points]
    chart = timeline(data, NOW)
    assert sum(bar.count for bar in chart.bars) == len(points)
    for code in {c for _, c in points}:
        assert chart.totals[code] == sum(1 for _, c in points if c == code)
    assert all(bar.y >= 0 and bar.y + bar.height <= 200.0001 for bar in chart.bars)
    assert all(bar.x + bar.width <= 720.0001 for bar in chart.bars)
