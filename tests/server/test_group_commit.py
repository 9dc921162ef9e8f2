"""Group commit (``JournalAccess``) and the SQLite writers' turn (``WriterTurn``).

Concurrent appends are written together yet each caller gets exactly its own indices, in its own
order; a failed append fails its callers (the service then answers 503) and the next append is
written; two service processes appending to one SQLite file lose and duplicate nothing.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_helpers import Deployment, ServerProcess, allowed_request, denied_request

from refusalkit.errors import UsageError
from refusalkit.journal import Entry, Journal, JournalAccess, _access, open_journal
from refusalkit.journal._records import index_fields
from refusalkit.journal._turn import WriterTurn, writer_turn
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json


def _records(caller: int, count: int) -> list[dict[str, Any]]:
    return [{"schema": "test/v1", "caller": caller, "n": n} for n in range(count)]


def _encoded(records: list[dict[str, Any]]) -> list[Entry]:
    return [(canonical_json(r), index_fields(r)) for r in records]


async def _append_concurrently(access: JournalAccess, sizes: list[int]) -> list[list[int]]:
    return await asyncio.gather(
        *[access.append(_encoded(_records(caller, size))) for caller, size in enumerate(sizes)]
    )


def test_concurrent_appends_get_their_own_gapless_indices(tmp_path: Path) -> None:
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")
    sizes = [1, 100, 3, 50, 1, 1, 7, 250, 2, 30] * 4

    async def run() -> list[list[int]]:
        access = JournalAccess(store, ring, origin=None, max_group=120)
        await access.open()
        try:
            return await _append_concurrently(access, sizes)
        finally:
            await access.close()

    answers = asyncio.run(run())
    assert [len(a) for a in answers] == sizes
    assert all(a == list(range(a[0], a[0] + len(a))) for a in answers)  # contiguous per caller
    assert sorted(i for a in answers for i in a) == list(range(sum(sizes)))
    with open_journal(store, ring) as journal:
        journal.verify()
        entries = [json.loads(e) for e in journal.entries(0, journal.size())]
    for caller, indices in enumerate(answers):
        assert [entries[i] for i in indices] == _records(caller, sizes[caller])


@pytest.fixture
def groups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every group the writer commits, read off the real ``Journal.append_encoded``."""
    sizes: list[int] = []
    real = Journal.append_encoded

    def counted(journal: Journal, entries: Any) -> list[int]:
        sizes.append(len(entries))
        return real(journal, entries)

    monkeypatch.setattr(Journal, "append_encoded", counted)
    return sizes


def test_the_appends_of_one_loop_turn_are_committed_together(
    tmp_path: Path, groups: list[int]
) -> None:
    """What one turn of the event loop appends goes to the store as one group, even when the
    turn runs long with the writer idle (a service loop deciding the rest of its ready requests:
    here each request "decides" for 20 ms without the GIL). Handed over one by one, the first
    was committed alone. The group sizes are read off the real ``Journal.append_encoded``."""
    ring = Keyring.generate()

    async def run() -> list[list[int]]:
        access = JournalAccess(str(tmp_path / "journal.db"), ring, origin=None, max_group=100)
        await access.open()

        async def request(caller: int) -> list[int]:
            time.sleep(0.02)  # deciding, in the same turn as the other requests
            return await access.append(_encoded(_records(caller, 1)))

        try:
            return await asyncio.gather(*[request(c) for c in range(8)])
        finally:
            await access.close()

    answers = asyncio.run(run())
    assert groups == [8]
    assert sorted(i for a in answers for i in a) == list(range(8))


def test_thread_callers_just_answered_share_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, groups: list[int]
) -> None:
    """Thread callers, each with one append in flight, are committed together once they are in
    step: the writer waits for the callers it has just answered before it takes the next group,
    where it took the first one back alone. The wait's bound is raised so that a loaded machine
    cannot make it run out (imports ``journal/_access.py`` for that: the writer's concurrency,
    which no public call schedules); the group sizes are read off ``Journal.append_encoded``."""
    monkeypatch.setattr(_access, "REGROUP_S", 1.0, raising=False)
    loop = asyncio.new_event_loop()
    access = JournalAccess(
        str(tmp_path / "journal.db"), Keyring.generate(), origin=None, max_group=50
    )
    loop.run_until_complete(access.open())

    def caller(c: int) -> list[int]:
        return [
            i
            for n in range(15)
            for i in access.append_from_thread(_encoded(_records(c, 1))).result(30)
        ]

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(caller, range(4)))
    finally:
        loop.run_until_complete(access.close())
        loop.close()
    assert sorted(i for a in answers for i in a) == list(range(60))
    assert groups.count(4) >= 10  # in step: one append of each caller a commit


def test_an_append_of_a_loop_stopped_mid_turn_is_written_at_close(tmp_path: Path) -> None:
    """A loop hands its turn's appends over at the end of the turn; one that stops before (its
    last turn's callbacks never run) still has its append written when the journal closes,
    and the close does not wait forever for it."""
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")
    access = JournalAccess(store, ring, origin=None, max_group=10)
    home = asyncio.new_event_loop()
    home.run_until_complete(access.open())
    other = asyncio.new_event_loop()
    pending = other.create_task(access.append(_encoded(_records(0, 1))))
    other.call_soon(other.stop)  # stops at the end of the turn in which the append runs
    other.run_forever()
    try:
        home.run_until_complete(asyncio.wait_for(access.close(), timeout=20))
        assert other.run_until_complete(pending) == [0]  # answered once the loop runs again
    finally:
        home.close()
        other.close()
    with open_journal(store, ring) as journal:
        assert journal.size() == 1


def test_close_answers_what_was_queued_and_ends_the_writer_thread(tmp_path: Path) -> None:
    """The writer is one long-lived thread: appends queued before ``close`` are written and
    answered, the thread is gone once ``close`` returns, and a later append fails (the
    journal is closed) rather than waiting for a writer that will never come."""
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")

    def writers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("journal-")]

    async def run() -> tuple[list[list[int]], BaseException | list[int]]:
        access = JournalAccess(store, ring, origin=None, max_group=10)
        await access.open()
        assert len(writers()) == 1
        queued = [asyncio.ensure_future(access.append(_encoded(_records(c, 2)))) for c in range(5)]
        await asyncio.sleep(0)  # the appends are staged; close publishes and writes them
        await access.close()
        late = await asyncio.gather(access.append(_encoded(_records(9, 1))), return_exceptions=True)
        return [q.result() for q in queued], late[0]

    answers, late = asyncio.run(run())
    assert sorted(i for a in answers for i in a) == list(range(10))
    assert isinstance(late, RuntimeError)
    assert writers() == []


def test_a_failed_append_fails_its_callers_and_the_next_is_written(tmp_path: Path) -> None:
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")

    async def run() -> tuple[BaseException | list[int], list[int]]:
        access = JournalAccess(store, ring, origin=None, max_group=10)
        await access.open()
        try:
            bad: list[Any] = [("not bytes", index_fields({}))]
            failed = await asyncio.gather(access.append(bad), return_exceptions=True)
            later = await access.append(_encoded(_records(0, 3)))
            return failed[0], later
        finally:
            await access.close()

    failed, later = asyncio.run(run())
    assert isinstance(failed, UsageError)
    assert later == [0, 1, 2]  # nothing of the failed append was written


def test_thread_callers_are_answered_by_the_writer_not_the_loop(tmp_path: Path) -> None:
    """``append_from_thread``: a thread's append is settled by the writer thread itself, so a
    busy event loop (a slow coroutine of the host application) does not hold it up, and thread
    and async callers still share gapless indices of one log."""
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")
    loop = asyncio.new_event_loop()
    access = JournalAccess(store, ring, origin=None, max_group=50)
    loop.run_until_complete(access.open())
    try:
        async_part = loop.create_task(access.append(_encoded(_records(0, 5))))
        loop.run_until_complete(async_part)
        # the loop is not running now: an append that needed it would never be answered
        with ThreadPoolExecutor(8) as pool:
            futures = [
                pool.submit(lambda c: access.append_from_thread(_encoded(_records(c, 3))), c)
                for c in range(1, 9)
            ]
            answers = [f.result().result(timeout=30) for f in futures]
    finally:
        loop.run_until_complete(access.close())
        loop.close()
    assert async_part.result() == [0, 1, 2, 3, 4]
    assert sorted(i for a in answers for i in a) == list(range(5, 5 + 8 * 3))
    with open_journal(store, ring) as journal:
        journal.verify()
        entries = [json.loads(e) for e in journal.entries(0, journal.size())]
    for caller, indices in enumerate(answers, start=1):
        assert [entries[i] for i in indices] == _records(caller, 3)


def test_the_writer_turn_excludes_other_holders(tmp_path: Path) -> None:
    turn = writer_turn(str(tmp_path / "journal.db"), is_postgres=False)
    assert isinstance(turn, WriterTurn)
    assert turn.path == tmp_path / "journal.db.writer-lock"
    assert turn.gate == tmp_path / "journal.db.writer-gate"
    other = os.open(turn.path, os.O_RDWR)
    try:
        with turn, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released: free to take
        fcntl.flock(other, fcntl.LOCK_UN)
    finally:
        os.close(other)
        turn.close()
    assert not isinstance(writer_turn("postgresql://x/y", is_postgres=True), WriterTurn)


def _gate_is_held(turn: WriterTurn) -> bool:
    probe = os.open(turn.gate, os.O_RDWR)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(probe)
    return False


def _take_turn(turn: WriterTurn, order: list[str]) -> None:
    with turn:
        order.append("waiter")
        time.sleep(0.05)  # long enough for the other writer to be asking again


def test_a_writer_that_asks_again_at_once_lets_the_waiter_in_first(tmp_path: Path) -> None:
    """flock alone lets a releasing writer re-take the lock before the woken waiter runs; the
    gate makes them alternate. Deterministic: the order of the turns is recorded."""
    store = str(tmp_path / "journal.db")
    busy, waiter = (writer_turn(store, is_postgres=False) for _ in range(2))
    assert isinstance(busy, WriterTurn)
    assert isinstance(waiter, WriterTurn)
    order: list[str] = []
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            with busy:
                order.append("busy")
                pending = pool.submit(_take_turn, waiter, order)
                deadline = time.monotonic() + 10
                while not _gate_is_held(busy):  # the waiter queued: holds the gate, waits
                    assert time.monotonic() < deadline, "the waiter never queued"
                    time.sleep(0.001)
            with busy:  # asks again at once: blocks at the gate until the waiter got its turn
                order.append("busy again")
                pending.result(timeout=10)
    finally:
        busy.close()
        waiter.close()
    assert order == ["busy", "waiter", "busy again"]


def _decide_many(
    server: ServerProcess, deployment: Deployment, worker: int
) -> list[tuple[str, int]]:
    acknowledged: list[tuple[str, int]] = []
    with httpx.Client(
        base_url=server.base_url, timeout=60, headers=deployment.keys.header("decide")
    ) as client:
        for b in range(10):
            batch = [
                allowed_request(k) if k % 2 else denied_request(k)
                for k in range(worker * 1000 + b * 20, worker * 1000 + b * 20 + 20)
            ]
            answer = client.post("/v1/decide/batch", json={"requests": batch})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            acknowledged += [
                (d["decision_id"], i)
                for d, i in zip(body["decisions"], body["indices"], strict=True)
            ]
    return acknowledged


@pytest.mark.slow
def test_two_processes_share_one_sqlite_journal(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    nodes = [start_server(deployment.server()) for _ in range(2)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(_decide_many, nodes[w % 2], deployment, w) for w in range(6)]
        acknowledged = [item for f in futures for item in f.result()]
    for node in nodes:
        node.stop()

    with open_journal(deployment.journal, deployment.keyring) as journal:
        journal.verify()
        size = journal.size()
        records = [json.loads(e) for e in journal.entries(0, size)]
    assert size == len(acknowledged) == 6 * 200
    assert sorted(i for _, i in acknowledged) == list(range(size))
    for decision_id, index in acknowledged:
        assert records[index]["decision_id"] == decision_id
