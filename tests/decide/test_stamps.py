"""``stamp`` gives what ``uuid7`` and ``format_timestamp`` would, from one clock reading."""

from __future__ import annotations

import datetime as dt
import os
import threading
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit._internal import stamps as _stamps
from refusalkit._internal.stamps import stamp
from refusalkit.model import format_timestamp


def test_stamp_gives_a_uuid7_and_the_time_of_the_same_millisecond() -> None:
    for _ in range(2000):
        decision_id, decided_at = stamp()
        parsed = uuid.UUID(decision_id)
        assert (parsed.version, parsed.variant, str(parsed)) == (7, uuid.RFC_4122, decision_id)
        ms = parsed.int >> 80
        moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        assert decided_at == format_timestamp(moment)


def _reference_tails(read: bytes) -> list[str]:
    """The tails of one read, laid out one by one: 19 of each 20 hex digits, the fourth giving
    the variant character ``89ab`` by its low two bits (RFC 9562 §4.1)."""
    h = read.hex()
    return [
        f"7{h[i : i + 3]}-{'89ab'[int(h[i + 3], 16) % 4]}{h[i + 4 : i + 7]}-{h[i + 7 : i + 19]}"
        for i in range(0, len(h), 20)
    ]


@settings(max_examples=50)
@given(st.binary(min_size=10 * _stamps._BATCH, max_size=10 * _stamps._BATCH))
def test_the_pool_is_filled_as_each_tail_laid_out_alone(read: bytes) -> None:
    """``_tails`` (a speed twin: one strided copy per character position) against the tails
    laid out one by one from the same random read."""
    real = os.urandom
    try:
        os.urandom = lambda size: read if size == len(read) else real(size)
        assert _stamps._tails() == _reference_tails(read)
    finally:
        os.urandom = real


class _EmptiedByOthers(list[str]):
    """A pool that other threads empty the moment it is refilled."""

    def extend(self, values: object) -> None:
        super().extend(values)  # type: ignore[arg-type]
        self.clear()


def test_a_pool_emptied_by_other_threads_during_its_refill_still_gives_an_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Concurrent callers (an enforcer shared by 8 threads) can take every id of a refill
    between one caller's refill and its own take; that caller must still get a fresh id, not
    an ``IndexError`` (which the engine turned into a fail-closed decision)."""
    monkeypatch.setattr(_stamps, "_pool", _EmptiedByOthers())
    ids = {stamp()[0] for _ in range(3)}
    assert len(ids) == 3
    assert all(uuid.UUID(i).version == 7 for i in ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_random_pool() -> None:
    stamp()  # the pool is filled now
    pending = list(_stamps._pool)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(write, ",".join(stamp()[0][-22:] for _ in range(len(pending))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as handle:
        child_tails = set(handle.read().split(","))
    os.waitpid(pid, 0)
    assert child_tails
    assert not child_tails & set(pending)


def test_uuid7_layout_and_uniqueness_across_threads() -> None:
    ids: list[str] = []

    def work() -> None:
        ids.extend(stamp()[0] for _ in range(2000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 8000
    for text in ids[:50]:
        parsed = uuid.UUID(text)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert text == str(parsed)
    ms = uuid.UUID(stamp()[0]).int >> 80
    now_ms = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    assert abs(now_ms - ms) < 60_000
