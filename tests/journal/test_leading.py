"""Thread callers that commit their own groups (``JournalAccess.append_leading``): with real
threads and a real SQLite journal, every index is unique and durable, a failed commit fails
every caller of its group (the enforcer: deny + ``unavailable``) and the next leader recovers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import refusalkit
from refusalkit.errors import StoreError
from refusalkit.journal import Entry, Journal, JournalAccess, open_journal
from refusalkit.journal._records import index_fields
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode, canonical_json

PACK = (
    "{policy: leading, version: v1, default: deny,"
    " rules: [{id: reads_ok, effect: allow, when: {tool: read_file}}]}\n"
)


def _records(caller: int, count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"schema": "test/v1", "caller": caller, "n": n} for n in range(start, start + count)]


def _encoded(records: list[dict[str, Any]]) -> list[Entry]:
    return [(canonical_json(r), index_fields(r)) for r in records]


def test_racing_threads_and_a_loop_get_unique_durable_indices(tmp_path: Path) -> None:
    """16 threads leading and following in turn, and an event loop's appends beside them: the
    indices handed out are exactly ``0..N-1``, each names its caller's own record, and the log
    verifies."""
    ring = Keyring.generate()
    store = str(tmp_path / "journal.db")
    loop = asyncio.new_event_loop()
    access = JournalAccess(store, ring, origin=None, max_group=7)
    loop.run_until_complete(access.open())
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()

    def caller(c: int) -> list[tuple[int, dict[str, Any]]]:
        got: list[tuple[int, dict[str, Any]]] = []
        for n in range(20):
            records = _records(c, 1 + n % 3, start=10 * n)
            indices = access.append_leading(_encoded(records), 30)
            got.extend(zip(indices, records, strict=True))
        return got

    async def looped() -> list[tuple[int, dict[str, Any]]]:
        got: list[tuple[int, dict[str, Any]]] = []
        for n in range(20):
            records = _records(99, 2, start=10 * n)
            got.extend(zip(await access.append(_encoded(records)), records, strict=True))
        return got

    try:
        from_loop = asyncio.run_coroutine_threadsafe(looped(), loop)
        with ThreadPoolExecutor(16) as pool:
            answers = [pair for got in pool.map(caller, range(16)) for pair in got]
        answers += from_loop.result(60)
    finally:
        asyncio.run_coroutine_threadsafe(access.close(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
        loop.close()
    indices = [i for i, _ in answers]
    assert len(set(indices)) == len(indices)
    assert sorted(indices) == list(range(len(indices)))
    with open_journal(store, ring) as journal:
        journal.verify()
        assert journal.size() == len(indices)
        entries = [json.loads(e) for e in journal.entries(0, journal.size())]
    assert all(entries[i] == record for i, record in answers)


def test_a_commit_failing_mid_group_refuses_every_caller_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One caller leads a slow commit; seven others queue behind it and share the next commit,
    which fails: each of the seven gets deny + ``unavailable`` (nothing of theirs was written),
    the first caller's decision stands, and the next caller leads a commit that succeeds."""
    pack = tmp_path / "pack.yaml"
    pack.write_text(PACK, encoding="utf-8")
    ring = Keyring.generate()
    store = tmp_path / "journal.db"
    original = Journal.append_encoded
    groups: list[int] = []
    leading = threading.Event()

    def append_encoded(self: Journal, entries: Sequence[Entry]) -> list[int]:
        groups.append(len(entries))
        if len(groups) == 1:
            leading.set()
            time.sleep(0.5)  # the others arrive during this commit
        elif len(groups) == 2:
            raise StoreError("the disk went away")
        return original(self, entries)

    monkeypatch.setattr(Journal, "append_encoded", append_encoded)
    request = {"tool": "read_file", "args": {"path": "/a"}, "caller": {"agent": "a"}}
    with refusalkit.enforcer(policy=pack, journal=store, keyring=ring) as enforcer:
        decisions: dict[int, refusalkit.Decision] = {}

        def caller(n: int) -> None:
            decisions[n] = enforcer.decide(request | {"args": {"path": f"/{n}"}})

        first = threading.Thread(target=caller, args=(0,))
        first.start()
        assert leading.wait(10)
        others = [threading.Thread(target=caller, args=(n,)) for n in range(1, 8)]
        for t in others:
            t.start()
        for t in [first, *others]:
            t.join()
        after = enforcer.decide(request)
    assert groups[:3] == [1, 7, 1]
    assert decisions[0].action is Action.ALLOW
    for n in range(1, 8):
        assert (decisions[n].action, decisions[n].reason_code) == (
            Action.DENY,
            ReasonCode.UNAVAILABLE,
        )
    assert after.action is Action.ALLOW
    with open_journal(store, ring) as journal:
        journal.verify()
        ids = [json.loads(e)["decision_id"] for e in journal.entries(0, journal.size())]
    assert ids == [decisions[0].decision_id, after.decision_id]


def _open_access(store: str, ring: Keyring) -> tuple[JournalAccess, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    access = JournalAccess(store, ring, origin=None, max_group=100)
    loop.run_until_complete(access.open())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return access, loop


def _close_access(access: JournalAccess, loop: asyncio.AbstractEventLoop) -> None:
    asyncio.run_coroutine_threadsafe(access.close(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


def _commits_by_thread(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record each commit as (the committing thread's name, its number of entries)."""
    original = Journal.append_encoded
    commits: list[tuple[str, int]] = []

    def append_encoded(self: Journal, entries: Sequence[Entry]) -> list[int]:
        commits.append((threading.current_thread().name, len(entries)))
        return original(self, entries)

    monkeypatch.setattr(Journal, "append_encoded", append_encoded)
    return commits


def test_the_caller_completing_a_gathered_group_commits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader waiting for the group the last one held (here 2 callers, the wait made a
    minute long so that only the take-over can end it) is answered by the caller that
    completes the group: that caller commits both appends on its own thread, in one commit,
    and the first gets its indices from it. Imports ``journal._access`` to lengthen the wait."""
    from refusalkit.journal import _access  # noqa: PLC0415 (the bounded wait, lengthened)

    ring = Keyring.generate()
    access, loop = _open_access(str(tmp_path / "journal.db"), ring)
    commits = _commits_by_thread(monkeypatch)
    monkeypatch.setattr(_access, "REGROUP_S", 60.0)
    access._led = 2  # the last leader's group held two thread callers
    answers: dict[str, list[int]] = {}

    def caller(name: str) -> None:
        answers[name] = access.append_leading(_encoded(_records(0, 1)), 30)

    try:
        first = threading.Thread(target=caller, args=("first",), name="first")
        first.start()
        while access._gatherer is None:  # the first leads and waits for its group
            assert first.is_alive()
            time.sleep(0.001)
        second = threading.Thread(target=caller, args=("second",), name="second")
        second.start()
        second.join(10)
        first.join(10)
        assert not first.is_alive()
        assert not second.is_alive()
    finally:
        _close_access(access, loop)
    assert commits == [("second", 2)]
    assert sorted([*answers["first"], *answers["second"]]) == [0, 1]


def test_a_loop_completing_a_gathered_group_wakes_its_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader waiting for its group (the wait made a minute long) is woken to commit as
    soon as an event loop's appends complete it: one commit of both, on the leader's own
    thread. Imports ``journal._access`` to lengthen the wait."""
    from refusalkit.journal import _access  # noqa: PLC0415 (the bounded wait, lengthened)

    ring = Keyring.generate()
    access, loop = _open_access(str(tmp_path / "journal.db"), ring)
    commits = _commits_by_thread(monkeypatch)
    monkeypatch.setattr(_access, "REGROUP_S", 60.0)
    access._led = 2
    answers: list[list[int]] = []
    first = threading.Thread(
        target=lambda: answers.append(access.append_leading(_encoded(_records(0, 1)), 30)),
        name="first",
    )
    try:
        first.start()
        while access._gatherer is None:
            assert first.is_alive()
            time.sleep(0.001)
        looped = asyncio.run_coroutine_threadsafe(access.append(_encoded(_records(1, 1))), loop)
        from_loop = looped.result(30)
        first.join(10)
        assert not first.is_alive()
    finally:
        _close_access(access, loop)
    assert commits == [("first", 2)]
    assert sorted([*answers[0], *from_loop]) == [0, 1]
