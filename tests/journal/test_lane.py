"""A journal's own thread (``_Lane``): it ends whenever the journal will never run anything
again, so a process that retries a store that cannot be opened keeps no thread per attempt, and
an append that comes after the journal closed is refused at once, never left waiting."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from refusalkit.enforce import GroupJournal
from refusalkit.errors import StoreError
from refusalkit.journal import Entry, Journal, JournalAccess
from refusalkit.journal._records import index_fields
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json


def _entry(n: int) -> list[Entry]:
    record = {"schema": "test/v1", "n": n}
    return [(canonical_json(record), index_fields(record))]


def _journal_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("journal-")]


def _not_a_database(tmp_path: Path) -> str:
    path = tmp_path / "journal.db"
    path.write_bytes(b"this is not an SQLite database, " * 64)
    return str(path)


def _wait_for_no_journal_threads(before: list[threading.Thread]) -> list[threading.Thread]:
    """The journal threads started since ``before`` that are still alive after a short grace."""
    for thread in _journal_threads():
        if thread not in before:
            thread.join(timeout=2)
    return [t for t in _journal_threads() if t not in before]


def test_a_failed_open_leaves_no_thread(tmp_path: Path) -> None:
    """Opening a store that is not a journal fails, and the thread started for it ends: nothing
    will ever be queued on it (the old one-worker pool's thread ended with its pool)."""
    store, ring = _not_a_database(tmp_path), Keyring.generate()
    before = _journal_threads()

    async def attempt() -> None:
        access = JournalAccess(store, ring, origin=None, max_group=8)
        with pytest.raises(StoreError):
            await access.open()

    for _ in range(3):
        asyncio.run(attempt())
    assert _wait_for_no_journal_threads(before) == []


def test_a_failed_enforcer_journal_leaves_no_thread(tmp_path: Path) -> None:
    """The in-process enforcer's journal: a store that cannot be opened raises and leaves no
    journal thread behind."""
    store, ring = _not_a_database(tmp_path), Keyring.generate()
    before = _journal_threads()
    for _ in range(3):
        with pytest.raises(StoreError):
            GroupJournal(store, ring)
    assert _wait_for_no_journal_threads(before) == []


def test_appends_after_close_fail_at_once(tmp_path: Path) -> None:
    """Every kind of append to a closed journal is refused (fail closed), none waits, and a
    failed open can still be closed."""
    ring = Keyring.generate()
    access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=8)

    async def run() -> None:
        await access.open()
        assert await access.append(_entry(0)) == [0]
        await access.close()
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(access.append(_entry(1)), timeout=5)
        with pytest.raises(RuntimeError):
            access.append_from_thread(_entry(2))
        with pytest.raises(RuntimeError):
            access.append_leading(_entry(3), 5)
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(access.read(lambda journal: journal.size()), timeout=5)

    asyncio.run(run())

    failed = JournalAccess(_not_a_database(tmp_path), ring, origin=None, max_group=8)

    async def reopen() -> None:
        with pytest.raises(StoreError):
            await failed.open()
        await asyncio.wait_for(failed.close(), timeout=5)

    asyncio.run(reopen())


def test_close_answers_the_appends_in_flight(tmp_path: Path) -> None:
    """Appends handed over just before ``close`` are all committed and answered before the
    journal closes; none is dropped or left waiting."""
    ring = Keyring.generate()
    access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=4)

    async def run() -> list[list[int]]:
        await access.open()
        pending = [asyncio.ensure_future(access.append(_entry(n))) for n in range(20)]
        handoffs = [access.append_from_thread(_entry(100 + n)) for n in range(5)]
        await asyncio.sleep(0)  # the appends are staged; close publishes what is left
        await asyncio.wait_for(access.close(), timeout=10)
        return [*await asyncio.gather(*pending), *(h.result(5) for h in handoffs)]

    indices = sorted(i for got in asyncio.run(run()) for i in got)
    assert indices == list(range(25))


class _Stop(BaseException):
    """A ``BaseException`` that is neither an ``Exception`` nor an interpreter signal."""


def test_a_job_raising_base_exception_reaches_its_caller_only(tmp_path: Path) -> None:
    """A job that raises a ``BaseException`` hands it to its own caller; the lane's thread goes
    on running the next jobs, appends included, and closes without waiting."""
    ring = Keyring.generate()
    access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=8)

    def stop(_journal: object) -> None:
        raise _Stop

    async def run() -> None:
        await access.open()
        for fn in (access.read, access.write):
            with pytest.raises(_Stop):
                await asyncio.wait_for(fn(stop), timeout=5)
        assert await asyncio.wait_for(access.append(_entry(0)), timeout=5) == [0]
        assert await access.read(lambda journal: journal.size()) == 1
        await asyncio.wait_for(access.close(), timeout=5)

    asyncio.run(run())


def test_a_caller_that_stops_waiting_skips_its_job(tmp_path: Path) -> None:
    """A read cancelled while an earlier job holds the lane never runs; the lane answers the
    jobs after it and closes."""
    ring = Keyring.generate()
    access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=8)
    release, ran = threading.Event(), list[object]()

    def hold(_journal: object) -> None:
        release.wait(5)

    async def run() -> None:
        await access.open()
        holding = asyncio.ensure_future(access.read(hold))
        skipped = asyncio.ensure_future(access.read(ran.append))
        await asyncio.sleep(0.05)
        skipped.cancel()
        await asyncio.sleep(0)
        release.set()
        await holding
        assert await asyncio.wait_for(access.append(_entry(0)), timeout=5) == [0]
        await asyncio.wait_for(access.close(), timeout=5)

    asyncio.run(run())
    assert ran == []


def test_an_open_failing_after_the_writer_opened_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step of ``JournalAccess.open`` after the writer's journal is open fails (here bounding
    its lock wait): the journal opened is closed and its thread ends, since no caller closes an
    access whose open failed."""
    closed: list[object] = []
    original_close = Journal.close

    def refuse(_journal: Journal, _seconds: float) -> None:
        raise StoreError("cannot bound the lock wait")

    def close(journal: Journal) -> None:
        closed.append(journal)
        original_close(journal)

    monkeypatch.setattr(Journal, "bound_lock_wait", refuse)
    monkeypatch.setattr(Journal, "close", close)
    before = _journal_threads()
    access = JournalAccess(
        str(tmp_path / "journal.db"), Keyring.generate(), origin=None, max_group=8, lock_wait_s=1
    )

    async def attempt() -> None:
        with pytest.raises(StoreError, match="lock wait"):
            await access.open()

    asyncio.run(attempt())
    assert len(closed) == 1
    assert _wait_for_no_journal_threads(before) == []


def _locked_store(
    store: str, ring: Keyring, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[object], sqlite3.Connection]:
    """A journal at ``store``, every ``Journal.close`` from now on listed, and a connection
    holding its write lock (an open waits for it until the holder rolls back)."""
    asyncio.run(_open_and_close(store, ring))
    closed: list[object] = []
    original_close = Journal.close

    def close(journal: Journal) -> None:
        closed.append(journal)
        original_close(journal)

    monkeypatch.setattr(Journal, "close", close)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return closed, holder


async def _cancel_an_open(store: str, ring: Keyring) -> None:
    """Start an open of ``store`` (waiting for a lock), and cancel its caller 0.3 s in."""
    opening = asyncio.ensure_future(JournalAccess(store, ring, origin=None, max_group=8).open())
    await asyncio.sleep(0.3)
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening


def test_an_open_cancelled_while_it_runs_closes_what_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller of ``JournalAccess.open`` is cancelled while the open waits for another
    writer's lock: once the lock is free the open finishes, and the journal it opened is closed
    on its thread, which then ends (else the store's connection waited for the garbage
    collector)."""
    store, ring = str(tmp_path / "journal.db"), Keyring.generate()
    closed, holder = _locked_store(store, ring, monkeypatch)
    before = _journal_threads()

    async def cancelled_open() -> None:
        await _cancel_an_open(store, ring)
        holder.execute("ROLLBACK")
        for _ in range(100):  # the open finishes on its thread; the close is queued from here
            await asyncio.sleep(0.02)
            if closed:
                break

    try:
        asyncio.run(cancelled_open())
    finally:
        holder.close()
    assert len(closed) == 1
    assert _wait_for_no_journal_threads(before) == []


def _loop_gone_by_asyncio_run(store: str, ring: Keyring) -> None:
    """``asyncio.run`` ends at once after the cancel: its shutdown cancels every task left."""

    asyncio.run(_cancel_an_open(store, ring))


def _loop_gone_by_close(store: str, ring: Keyring) -> None:
    """The loop is stopped and closed under the open, no task cancelled (``GroupJournal``'s
    stop when its caller is interrupted while the open waits)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    opening = JournalAccess(store, ring, origin=None, max_group=8).open()
    asyncio.run_coroutine_threadsafe(opening, loop)
    time.sleep(0.3)
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


@pytest.mark.parametrize("end_loop", [_loop_gone_by_asyncio_run, _loop_gone_by_close])
def test_an_open_whose_loop_is_gone_when_it_ends_closes_what_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end_loop: Callable[[str, Keyring], None]
) -> None:
    """The loop that asked for an open is gone (closed, or its tasks cancelled) before the open
    finishes on the lane's thread: the journal it opened is closed there and the thread ends,
    with no loop left to run a callback (else the connection waited for the garbage collector
    and, the loop closed, the thread waited for ever)."""
    store, ring = str(tmp_path / "journal.db"), Keyring.generate()
    closed, holder = _locked_store(store, ring, monkeypatch)
    before = _journal_threads()
    try:
        end_loop(store, ring)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _wait_for_no_journal_threads(before) == []
    assert len(closed) == 1


async def _open_and_close(store: str, ring: Keyring) -> None:
    access = JournalAccess(store, ring, origin=None, max_group=8)
    await access.open()
    await access.close()


def test_a_failing_housekeeping_leaves_the_writer_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Housekeeping between groups (``Journal.maintain``) that fails with any error, not only a
    ``StoreError``, is logged and the writer goes on: the appends after it are committed at
    once, not left to wait out their bound and fail (fault injected: the real store never
    raises anything else today, but the writer must not depend on that)."""
    ring = Keyring.generate()
    access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=8)

    def broken(_journal: Journal) -> bool:
        raise RuntimeError("housekeeping broke")

    monkeypatch.setattr(Journal, "maintain", broken)

    async def run() -> list[list[int]]:
        await access.open()
        got = [await asyncio.wait_for(access.append(_entry(n)), timeout=5) for n in range(3)]
        got.append(access.append_leading(_entry(3), timeout=5))
        await asyncio.wait_for(access.close(), timeout=5)
        return got

    assert asyncio.run(run()) == [[0], [1], [2], [3]]
