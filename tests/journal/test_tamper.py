"""Tamper evidence: each kind of tampering with a stored journal is caught at its first bad index.

The attacker edits the store directly with SQL, as anyone with the file or database could.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import VerificationError
from refusalkit.journal import Checkpoint, leaf_hash, open_journal
from refusalkit.journal._checkpoint import sign_checkpoint
from refusalkit.journal._store import node_row, plan_nodes
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

SqlRunner = Callable[..., list[Any]]
DecisionMaker = Callable[..., dict[str, Any]]

N = 20


@pytest.fixture
def journal_at(decision: DecisionMaker, store_url: str, keyring: Keyring) -> str:
    """A journal of N decisions with checkpoints at sizes 8, 13 and N."""
    with open_journal(store_url, keyring, origin="example.com/log") as journal:
        journal.append([decision(i) for i in range(8)])
        journal.checkpoint()
        journal.append([decision(i) for i in range(8, 13)])
        journal.checkpoint()
        journal.append([decision(i) for i in range(13, N)])
        journal.checkpoint()
        journal.verify()
    return store_url


def _first_bad(store_url: str, keyring: Keyring) -> VerificationError:
    with open_journal(store_url, keyring) as journal, pytest.raises(VerificationError) as failed:
        journal.verify()
    return failed.value


def _data(sql: SqlRunner, index: int) -> bytes:
    return bytes(sql("SELECT data FROM journal_entry WHERE idx = ?", index)[0][0])


def test_untouched_journal_verifies(journal_at: str, keyring: Keyring) -> None:
    with open_journal(journal_at, keyring) as journal:
        report = journal.verify()
    assert (report.size, report.checkpoints, report.unsigned_entries) == (N, 3, 0)


@pytest.mark.parametrize("index", [0, 9, N - 1])
def test_flipped_byte_in_an_entry(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner, index: int
) -> None:
    data = bytearray(_data(raw_sql, index))
    data[len(data) // 2] ^= 0x20
    raw_sql("UPDATE journal_entry SET data = ? WHERE idx = ?", bytes(data), index)
    error = _first_bad(journal_at, keyring)
    assert error.index == index
    assert f"entry {index}" in error.message


def test_deleted_entry(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    raw_sql("DELETE FROM journal_entry WHERE idx = 6")
    assert _first_bad(journal_at, keyring).index == 6


def test_deleted_entry_with_later_ones_renumbered(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    raw_sql("DELETE FROM journal_entry WHERE idx = 6")
    raw_sql("UPDATE journal_entry SET idx = -(idx - 1) WHERE idx > 6")
    raw_sql("UPDATE journal_entry SET idx = -idx WHERE idx < 0")
    assert _first_bad(journal_at, keyring).index == 6


def test_inserted_entry(
    decision: DecisionMaker, journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    raw_sql("UPDATE journal_entry SET idx = -(idx + 1) WHERE idx >= 11")
    raw_sql("UPDATE journal_entry SET idx = -idx WHERE idx < 0")
    raw_sql("INSERT INTO journal_entry (idx, data) VALUES (?, ?)", 11, canonical_json(decision(99)))
    assert _first_bad(journal_at, keyring).index == 11


def test_entry_appended_behind_the_logs_back(
    decision: DecisionMaker, journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    raw_sql("INSERT INTO journal_entry (idx, data) VALUES (?, ?)", N, canonical_json(decision(99)))
    assert _first_bad(journal_at, keyring).index == N


def test_reordered_entries(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    a, b = _data(raw_sql, 3), _data(raw_sql, 15)
    raw_sql("UPDATE journal_entry SET data = ? WHERE idx = 3", b)
    raw_sql("UPDATE journal_entry SET data = ? WHERE idx = 15", a)
    assert _first_bad(journal_at, keyring).index == 3


def test_truncated_entries(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    raw_sql("DELETE FROM journal_entry WHERE idx >= 15")
    error = _first_bad(journal_at, keyring)
    assert error.index == 15
    assert "truncated" in error.message


def test_truncated_log_with_head_and_tree_rewound(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    raw_sql("DELETE FROM journal_entry WHERE idx >= 10")
    raw_sql("UPDATE journal_head SET size = 10")
    raw_sql("DELETE FROM journal_checkpoint WHERE size > 13")  # hide the newest checkpoint too
    error = _first_bad(journal_at, keyring)
    assert error.index == 10
    assert "checkpoint #2" in error.message


def test_flipped_byte_in_a_stored_tree_node(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    row = node_row(1, 5)  # level 1, index 5: covers entries 10 and 11, kept in entry 11's row
    assert row == 11
    node = bytearray(raw_sql("SELECT nodes FROM journal_entry WHERE idx = ?", row)[0][0])
    node[0] ^= 1
    raw_sql("UPDATE journal_entry SET nodes = ? WHERE idx = ?", bytes(node), row)
    assert _first_bad(journal_at, keyring).index == 10


def test_flipped_byte_in_a_higher_stored_node(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    row = node_row(3, 1)  # level 3, index 1: covers entries 8 to 15, third hash of row 15
    node = bytearray(raw_sql("SELECT nodes FROM journal_entry WHERE idx = ?", row)[0][0])
    assert len(node) == 4 * 32  # 15 = 0b1111 completes nodes at levels 1 to 4
    node[2 * 32 + 7] ^= 1
    raw_sql("UPDATE journal_entry SET nodes = ? WHERE idx = ?", bytes(node), row)
    assert _first_bad(journal_at, keyring).index == 8


def test_consistent_rewrite_is_caught_by_the_signed_checkpoints(
    decision: DecisionMaker, journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    forged = canonical_json({**decision(10), "action": "allow"})
    raw_sql("UPDATE journal_entry SET data = ?, leaf = ? WHERE idx = 10", forged, leaf_hash(forged))
    leaves = [leaf_hash(_data(raw_sql, i)) for i in range(N)]
    for index, hashes in enumerate(plan_nodes(0, [], leaves)):
        raw_sql("UPDATE journal_entry SET nodes = ? WHERE idx = ?", hashes, index)
    error = _first_bad(journal_at, keyring)
    assert error.index == 8  # the last checkpoint that still verifies covers [0, 8)
    assert "does not match the entries" in error.message


def test_forged_checkpoint_text(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    seq, note = raw_sql("SELECT seq, note FROM journal_checkpoint ORDER BY seq DESC LIMIT 1")[0]
    lines = note.split("\n")
    lines[1] = "19"
    raw_sql("UPDATE journal_checkpoint SET note = ? WHERE seq = ?", "\n".join(lines), seq)
    error = _first_bad(journal_at, keyring)
    assert error.index == 13
    assert "invalid signature" in error.message


def test_checkpoint_signed_by_another_key(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    stranger = Keyring.generate().signing_key()
    note = sign_checkpoint(Checkpoint("example.com/log", 20, b"\x07" * 32), stranger)
    raw_sql("INSERT INTO journal_checkpoint (size, note) VALUES (?, ?)", 20, note)
    error = _first_bad(journal_at, keyring)
    assert error.index == N
    assert "checkpoint #4 does not verify: checkpoint is signed by a key you did not pass" in (
        error.message
    )


def test_checkpoint_from_another_origin(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    note = sign_checkpoint(Checkpoint("example.com/other", 3, b"\x07" * 32), keyring.signing_key())
    raw_sql("INSERT INTO journal_checkpoint (size, note) VALUES (?, ?)", 3, note)
    error = _first_bad(journal_at, keyring)
    assert "another log" in error.hint or "origin" in error.message
    assert error.index == N


def test_rewritten_index_columns(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner, decision: DecisionMaker
) -> None:
    raw_sql("UPDATE journal_entry SET action = 'allow', reason_code = NULL WHERE idx = 3")
    with open_journal(journal_at, keyring) as journal:
        allowed = [i for i, _ in journal.query(action="allow")]
    assert allowed == [3]  # what query now answers: exactly what verify must refuse
    error = _first_bad(journal_at, keyring)
    assert error.index == 3
    assert "action='allow' (bytes say 'deny')" in error.message


@pytest.mark.parametrize(
    ("column", "value"),
    [("schema", "x"), ("matched_rule", None), ("agent", "b"), ("session", "s-9"), ("at", "2027")],
)
def test_each_index_column_is_checked(
    journal_at: str, keyring: Keyring, raw_sql: SqlRunner, column: str, value: str | None
) -> None:
    raw_sql(f"UPDATE journal_entry SET {column} = ? WHERE idx = 17", value)
    error = _first_bad(journal_at, keyring)
    assert error.index == 17
    assert column in error.message


def test_all_checkpoints_deleted(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    raw_sql("DELETE FROM journal_checkpoint")
    error = _first_bad(journal_at, keyring)
    assert error.index == 0
    assert "checkpoints were removed: 0 stored, 3 recorded" in error.message


def test_newest_checkpoint_deleted(journal_at: str, keyring: Keyring, raw_sql: SqlRunner) -> None:
    raw_sql("DELETE FROM journal_checkpoint WHERE size = ?", N)
    error = _first_bad(journal_at, keyring)
    assert error.index == 13  # the remaining checkpoints vouch for [0, 13)
    assert "checkpoints were removed" in error.message


def test_checkpoints_and_their_count_deleted_in_sqlite(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    store = str(tmp_path / "j.db")
    with open_journal(store, keyring) as journal:
        journal.append([decision(0)])
        journal.checkpoint()
    with sqlite3.connect(store) as db:  # SQLite also counts them in sqlite_sequence
        db.execute("DELETE FROM journal_checkpoint")
        db.execute("DELETE FROM journal_meta WHERE key = 'checkpoints'")
    assert "checkpoints were removed" in _first_bad(store, keyring).message


def test_checkpoint_count_survives_reopening_and_more_checkpoints(
    journal_at: str, keyring: Keyring, decision: DecisionMaker
) -> None:
    with open_journal(journal_at, keyring) as journal:
        journal.append([decision(N)])
        journal.checkpoint()
        journal.checkpoint()  # same size and root: not stored twice
        assert journal.store.recorded_checkpoints() == 4
        assert journal.verify().checkpoints == 4
