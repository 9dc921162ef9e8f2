"""``refusalkit.enforcer``: the local ``Enforcer``, journaling each decision or failing closed."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
from pathlib import Path

import psycopg
import pytest

import refusalkit
from refusalkit.enforce import Enforcer, ToolBlockedError
from refusalkit.errors import UsageError
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode, refusal_line
from support.live_service import tools_deployment


def _req(tool: str) -> dict[str, object]:
    return {"tool": tool, "args": {}, "caller": {"agent": "a"}}


def test_decides_and_journals_every_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    store = tmp_path / "local.db"
    with refusalkit.enforcer(policy=d.pack, journal=store, keyring=d.keyring_path) as enforcer:
        assert isinstance(enforcer, Enforcer)
        denied = enforcer.decide(_req("delete_file"))
        audited = asyncio.run(enforcer.adecide(_req("send_email")))
    assert (denied.action, audited.action) == (Action.DENY, Action.AUDIT)
    with open_journal(store, d.keyring, create=False) as journal:
        ids = [r["decision_id"] for _, r in journal.query(schema="refusalkit.decision/v1")]
        assert ids == [denied.decision_id, audited.decision_id]
        journal.checkpoint()
        assert journal.verify().size == 2


def test_a_decision_the_journal_cannot_take_is_refused(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    enforcer = refusalkit.enforcer(policy=d.pack, journal=tmp_path / "j.db", keyring=d.keyring)
    enforcer.close()  # the store is gone: every append fails
    decision = enforcer.decide(_req("read_file"))
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "journal cannot take" in (decision.why_trail[-1].detail or "")


def test_a_journal_needs_its_keyring(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    with pytest.raises(UsageError, match="keyring"):
        refusalkit.enforcer(policy=d.pack, journal=tmp_path / "j.db")


def test_a_block_is_a_typed_error_carrying_the_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    decision = refusalkit.enforcer(policy=d.pack).decide(_req("wipe_disk"))
    error = ToolBlockedError(decision)
    assert error.decision is decision
    assert str(error) == refusal_line(decision)
    assert isinstance(error, refusalkit.RefusalkitError)


def _journaled_ids(store: Path, keyring: Keyring) -> list[str]:
    """The decision ids in ``store``, read through a connection of its own."""
    with open_journal(store, keyring, create=False) as journal:
        return [r["decision_id"] for _, r in journal.query(schema="refusalkit.decision/v1")]


def test_concurrent_threads_each_get_a_durable_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    store = tmp_path / "threads.db"
    seen: list[tuple[str, bool]] = []
    lock = threading.Lock()
    with refusalkit.enforcer(policy=d.pack, journal=store, keyring=d.keyring) as enforcer:

        def caller(n: int) -> None:
            for tool in ("read_file", "delete_file", "send_email"):
                decision = enforcer.decide(_req(tool) | {"caller": {"agent": f"a{n}"}})
                durable = decision.decision_id in _journaled_ids(store, d.keyring)
                with lock:
                    seen.append((decision.decision_id, durable))

        threads = [threading.Thread(target=caller, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(seen) == 24
    assert all(durable for _, durable in seen)
    assert sorted(_journaled_ids(store, d.keyring)) == sorted(i for i, _ in seen)


def test_concurrent_tasks_each_get_a_durable_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    store = tmp_path / "tasks.db"

    async def run(enforcer: refusalkit.LocalEnforcer) -> list[tuple[str, bool]]:
        async def one(n: int) -> tuple[str, bool]:
            decision = await enforcer.adecide(_req("send_email") | {"caller": {"agent": f"a{n}"}})
            return decision.decision_id, decision.decision_id in _journaled_ids(store, d.keyring)

        return list(await asyncio.gather(*(one(n) for n in range(16))))

    with refusalkit.enforcer(policy=d.pack, journal=store, keyring=d.keyring) as enforcer:
        seen = asyncio.run(run(enforcer))
    assert len({i for i, _ in seen}) == 16
    assert all(durable for _, durable in seen)
    assert sorted(_journaled_ids(store, d.keyring)) == sorted(i for i, _ in seen)


def test_a_journal_locked_by_another_writer_fails_closed(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    store = tmp_path / "locked.db"
    enforcer = refusalkit.enforcer(
        policy=d.pack, journal=store, keyring=d.keyring, journal_wait_s=0.3
    )
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the store: no append can commit
    try:
        sync = enforcer.decide(_req("read_file"))
        late = asyncio.run(enforcer.adecide(_req("read_file")))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        enforcer.close()
    for decision in (sync, late):
        assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
        assert "journal cannot take" in (decision.why_trail[-1].detail or "")


def _decided_within(enforcer: refusalkit.LocalEnforcer, seconds: float) -> list[Decision]:
    """The enforcer's decision of one call, made on a thread given ``seconds`` to return (a
    decision held back past its bound leaves the list empty rather than hanging the test)."""
    out: list[Decision] = []
    worker = threading.Thread(target=lambda: out.append(enforcer.decide(_req("read_file"))))
    worker.start()
    worker.join(seconds)
    return list(out)  # as it was at the bound: a decision the lock's release lets out is late


def _refused_unavailable(decided: list[Decision]) -> None:
    assert decided, "the decision was held back past the journal's bound"
    assert (decided[0].action, decided[0].reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)


def test_a_writer_turn_held_by_another_process_fails_closed_within_the_bound(
    tmp_path: Path,
) -> None:
    """Another process holding the SQLite journal's writer turn (its ``.writer-lock`` side file)
    for good cannot hold a decision back: past ``journal_wait_s`` it is refused ``unavailable``."""
    d = tools_deployment(tmp_path)
    store = tmp_path / "turn.db"
    enforcer = refusalkit.enforcer(
        policy=d.pack, journal=store, keyring=d.keyring, journal_wait_s=0.3
    )
    holder = os.open(f"{store}.writer-lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # an open file of its own: it conflicts like a process
    try:
        decided = _decided_within(enforcer, 10)
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    after = enforcer.decide(_req("read_file"))
    enforcer.close()
    _refused_unavailable(decided)
    assert after.action is not Action.DENY or after.reason_code is not ReasonCode.UNAVAILABLE


@pytest.mark.postgres
def test_a_head_row_locked_by_another_session_fails_closed_within_the_bound(
    tmp_path: Path, postgres_url: str
) -> None:
    """A PostgreSQL session that keeps the journal's head row locked cannot hold a decision
    back: the writer's ``lock_timeout`` is the enforcer's bound."""
    d = tools_deployment(tmp_path)
    enforcer = refusalkit.enforcer(
        policy=d.pack, journal=postgres_url, keyring=d.keyring, journal_wait_s=0.3
    )
    with psycopg.connect(postgres_url) as holder:
        holder.execute("SELECT size FROM journal_head WHERE id = 1 FOR UPDATE")  # kept open
        decided = _decided_within(enforcer, 10)
        holder.rollback()
    enforcer.close()
    _refused_unavailable(decided)


def test_a_closed_enforcer_refuses_async_callers_too(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    enforcer = refusalkit.enforcer(policy=d.pack, journal=tmp_path / "j.db", keyring=d.keyring)
    enforcer.close()
    decision = asyncio.run(enforcer.adecide(_req("read_file")))
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
