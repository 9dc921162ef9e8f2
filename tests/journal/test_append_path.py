"""The append path's shortcuts: the cached right frontier (reloaded when another writer moved the
head) and SQLite WAL checkpoints kept off the commit but bounded (docs/design/journal.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import StoreError, UsageError
from refusalkit.journal import leaf_hash, open_journal
from refusalkit.journal._records import index_fields
from refusalkit.journal._tree import frontier_nodes
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

Make = Callable[..., dict[str, Any]]


def test_interleaved_writers_reload_the_frontier(
    store_url: str, keyring: Keyring, decision: Make
) -> None:
    """Two journals on one store take turns; each one's cached frontier goes stale every time
    and must be reloaded, else the tree nodes it writes would be wrong and verify would fail."""
    with (
        open_journal(store_url, keyring, origin="example.com/t") as one,
        open_journal(store_url, keyring) as two,
    ):
        indices: list[int] = []
        for turn, n in enumerate([1, 3, 2, 7, 1, 5, 8, 1, 4, 2, 2]):
            writer = one if turn % 3 else two
            indices += writer.append([decision(len(indices) + k) for k in range(n)])
        assert indices == list(range(36))
        one.checkpoint()
        assert one.verify().size == two.size() == 36
        two.append([decision(36)])
        one.append([decision(37)])
        two.checkpoint()
        assert two.verify().size == 38
        assert one.consistency_proof(36, 38)["new"] == 38


def test_failed_append_drops_the_cached_frontier(
    store_url: str, keyring: Keyring, decision: Make
) -> None:
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(i) for i in range(5)])
        cache = journal.store._frontier  # type: ignore[attr-defined]
        assert cache.size == 5
        journal.store.close()
        with pytest.raises((StoreError, sqlite3.ProgrammingError)):
            journal.append([decision(5)])
        assert cache.size == -1
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(5)])
        journal.checkpoint()
        assert journal.verify().size == 6


def test_sqlite_wal_stays_bounded_without_maintain(
    tmp_path: Path, keyring: Keyring, decision: Make
) -> None:
    """Automatic WAL checkpoints are off; ``append`` runs one itself once twice the threshold
    was appended, so a caller that never calls ``maintain`` still has a bounded WAL."""
    path = tmp_path / "j.db"
    wal = Path(f"{path}-wal")
    with open_journal(path, keyring) as journal:
        journal.store.wal_checkpoint_bytes = 64 << 10  # type: ignore[attr-defined]
        largest = 0
        for start in range(0, 3000, 50):
            journal.append([decision(start + k) for k in range(50)])
            largest = max(largest, wal.stat().st_size)
        appended = sum(len(e) for e in journal.entries(0, journal.size()))
        assert appended > 1_500_000
        assert largest < 1_000_000, f"WAL grew to {largest} bytes"
        journal.checkpoint()
        assert journal.verify().size == 3000


def test_sqlite_maintain_checkpoints_past_the_threshold(
    tmp_path: Path, keyring: Keyring, decision: Make
) -> None:
    path = tmp_path / "j.db"
    with open_journal(path, keyring) as journal:
        journal.store.wal_checkpoint_bytes = 1 << 30  # type: ignore[attr-defined]
        journal.append([decision(i) for i in range(200)])
        assert journal.maintain() is False
        journal.store.wal_checkpoint_bytes = 1024  # type: ignore[attr-defined]
        assert journal.maintain() is True
        assert journal.maintain() is False  # nothing appended since
        frames = journal.store._all("PRAGMA wal_checkpoint(PASSIVE)")[0]
        assert frames[0] == 0  # not busy
        assert frames[1] == frames[2]  # every WAL frame was checkpointed


def test_sqlite_stores_the_blobs_as_blobs(tmp_path: Path, keyring: Keyring, decision: Make) -> None:
    """The append binds each row's bytes, leaf hash and node hashes as ``bytearray`` (bound
    without the sqlite3 module's adapter lookup): SQLite stores them as BLOBs, exactly the
    bytes, as it does ``bytes``; a leaf that completes no node stores NULL."""
    path = tmp_path / "j.db"
    with open_journal(path, keyring) as journal:
        journal.append([decision(i) for i in range(5)])
        journal.append([decision(5)])
        expected = journal.entries(0, 6)
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT typeof(data), typeof(leaf), typeof(nodes), data, leaf FROM journal_entry"
            " ORDER BY idx"
        ).fetchall()
    assert [r[:3] for r in rows] == [
        ("blob", "blob", "null" if i % 2 == 0 else "blob") for i in range(6)
    ]
    assert [r[3] for r in rows] == expected
    assert [r[4] for r in rows] == [leaf_hash(e) for e in expected]


def test_unbounded_wal_without_wal_checkpoints(
    tmp_path: Path, keyring: Keyring, decision: Make
) -> None:
    """The control: with WAL checkpoints held off, the same appends do grow the WAL past the bound
    (so the bounded-WAL test above can fail)."""
    path = tmp_path / "j.db"
    with open_journal(path, keyring) as journal:
        journal.store.wal_checkpoint_bytes = 1 << 40  # type: ignore[attr-defined]
        for start in range(0, 3000, 50):
            journal.append([decision(start + k) for k in range(50)])
        assert Path(f"{path}-wal").stat().st_size > 1_000_000


def test_threads_share_one_journal(store_url: str, keyring: Keyring, decision: Make) -> None:
    """Appends from several threads through one journal: the cache changes under the lock."""
    with open_journal(store_url, keyring) as journal:

        def work(tag: int) -> list[int]:
            got: list[int] = []
            for k in range(20):
                got += journal.append([decision(tag * 1000 + k * 3 + j) for j in range(k % 3 + 1)])
            return got

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(work, range(4)))
        every = sorted(i for got in results for i in got)
        assert every == list(range(journal.size()))
        journal.checkpoint()
        assert journal.verify().size == len(every)


def test_append_encoded_equals_append(store_url: str, keyring: Keyring, decision: Make) -> None:
    """Entries encoded by the caller land exactly as the same records appended."""
    records = [decision(i) for i in range(70)]  # more than one multi-row INSERT chunk
    with open_journal(store_url, keyring, origin="example.com/a") as journal:
        journal.append(records)
        encoded = [(canonical_json(r), index_fields(r)) for r in records]
        assert journal.append_encoded(encoded) == list(range(70, 140))
        assert journal.entries(0, 70) == journal.entries(70, 140)
        assert journal.verify().size == 140


@pytest.mark.parametrize(
    "entry", [("text, not bytes", (None,) * 7), (b"{}", (None,) * 6), (b"{}", ())]
)
def test_append_encoded_refuses_a_malformed_entry(
    tmp_path: Path, keyring: Keyring, entry: Any
) -> None:
    with open_journal(tmp_path / "j.db", keyring) as journal:
        with pytest.raises(UsageError, match="entry 1 is not"):
            journal.append_encoded([(b"{}", (None,) * 7), entry])
        assert journal.size() == 0  # nothing of the batch was written


@pytest.mark.postgres
def test_postgres_head_and_frontier_in_one_statement(
    postgres_url: str, keyring: Keyring, decision: Make
) -> None:
    """``_fresh_head`` reads the same frontier as the general reader, at every size (each size
    has a different set of frontier subtrees: one per set bit)."""
    with open_journal(postgres_url, keyring) as journal:
        store: Any = journal.store
        for size in range(1, 70):
            journal.append([decision(size)])
            head, hashes = store._fresh_head()
            assert head == size
            snapshot_size, nodes = store.snapshot()
            assert snapshot_size == size
            assert hashes == [nodes[n] for n in frontier_nodes(size)]


@pytest.mark.postgres
def test_postgres_a_stale_writer_appends_without_the_lock(
    postgres_url: str, keyring: Keyring, decision: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After another writer moved the head, the cached compare-and-append loses and the fresh
    head makes the second one win: the locking path is not needed."""
    with open_journal(postgres_url, keyring) as one, open_journal(postgres_url, keyring) as two:
        one.append([decision(0)])
        two.append([decision(1)])

        def refuse(*_: Any) -> int:
            raise AssertionError("took the locking path")

        monkeypatch.setattr(type(one.store), "_append_locked", refuse)
        for k in range(2, 12):
            (one if k % 2 else two).append([decision(k)])
        monkeypatch.undo()
        one.checkpoint()
        assert one.verify().size == 12


@pytest.mark.postgres
def test_postgres_losing_twice_falls_back_to_the_lock(
    postgres_url: str, keyring: Keyring, decision: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh read that is stale again by the time it is used (a busy rival) ends in the
    locking path, which always succeeds."""
    with open_journal(postgres_url, keyring) as one, open_journal(postgres_url, keyring) as two:
        one.append([decision(0)])
        stale = one.store._fresh_head()  # type: ignore[attr-defined]
        two.append([decision(1), decision(2)])
        monkeypatch.setattr(type(one.store), "_fresh_head", lambda _: stale)
        assert one.append([decision(3)]) == [3]
        monkeypatch.undo()
        one.checkpoint()
        assert one.verify().size == 4
