"""One behaviour suite for the journal API, run against SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import KeyringError, ProofError, StoreError, UsageError, VerificationError
from refusalkit.journal import (
    NoteVerifier,
    Receipt,
    UntrustedKeyError,
    leaf_hash,
    open_checkpoint,
    open_journal,
    verify_consistency,
    verify_inclusion,
    verify_receipt,
)
from refusalkit.journal._tree import root_of_leaves
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

DecisionMaker = Callable[..., dict[str, Any]]


def test_append_is_gapless_and_entries_are_the_rfc8785_bytes(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring, origin="example.com/decisions") as journal:
        assert journal.size() == 0
        assert journal.append([]) == []
        assert journal.append([decision(0)]) == [0]
        assert journal.append([decision(i) for i in range(1, 10)]) == list(range(1, 10))
        assert journal.size() == 10
        assert journal.entries(3, 5) == [canonical_json(decision(3)), canonical_json(decision(4))]
        assert journal.origin == "example.com/decisions"
        assert len(journal.public_key_bytes()) == 32


def test_reopen_keeps_entries_origin_and_checkpoints(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(i) for i in range(5)])
        note = journal.checkpoint()
        origin = journal.origin
    assert origin.startswith("refusalkit.local/journal/")
    with open_journal(store_url, keyring) as journal:
        assert journal.origin == origin
        assert journal.size() == 5
        assert journal.latest_checkpoint() == note
        journal.verify()


def test_checkpoint_is_a_signed_c2sp_note_with_the_rfc_root(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring, origin="example.com/log") as journal:
        journal.append([decision(i) for i in range(7)])
        note = journal.checkpoint()
        lines = note.split("\n")
        assert lines[:2] == ["example.com/log", "7"]
        leaves = [leaf_hash(canonical_json(decision(i))) for i in range(7)]
        assert base64.b64decode(lines[2]) == root_of_leaves(leaves)
        assert lines[3] == ""
        assert lines[4].startswith("\u2014 example.com/log ")
        trusted = NoteVerifier.for_key("example.com/log", keyring.public_key_bytes())
        assert open_checkpoint(note, [trusted], origin="example.com/log").size == 7
        assert journal.checkpoint() == note  # same size, same key: no duplicate
        assert len(journal.checkpoints()) == 1


def test_proofs_verify_against_checkpoints(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring, origin="example.com/log") as journal:
        journal.append([decision(i) for i in range(11)])
        journal.append([decision(i) for i in range(11, 37)])
        leaves = [leaf_hash(canonical_json(decision(i))) for i in range(37)]
        for size in (1, 11, 16, 37):
            root = root_of_leaves(leaves[:size])
            for index in range(size):
                proof = journal.inclusion_proof(index, size)
                assert proof["tree_size"] == size
                assert proof["leaf_hash"] == leaves[index].hex()
                hashes = [bytes.fromhex(h) for h in proof["hashes"]]
                verify_inclusion(index, size, leaves[index], hashes, root)
        for old in (1, 5, 11, 16, 36, 37):
            proof = journal.consistency_proof(old)
            assert proof["new"] == 37
            hashes = [bytes.fromhex(h) for h in proof["hashes"]]
            verify_consistency(
                old, 37, hashes, root_of_leaves(leaves[:old]), root_of_leaves(leaves)
            )


def test_receipts_verify_offline(decision: DecisionMaker, store_url: str, keyring: Keyring) -> None:
    with open_journal(store_url, keyring, origin="example.com/log") as journal:
        journal.append([decision(i) for i in range(5)])
        journal.checkpoint()
        journal.append([decision(5)])
        receipt = journal.receipt(5)  # not covered: signs a new checkpoint
        assert receipt.tree_size == 6
        early = journal.receipt(2)
        assert early.tree_size == 6
    for index, r in ((5, receipt), (2, early)):
        verify_receipt(decision(index), r, public_key=keyring.public_key_bytes())
        verify_receipt(
            canonical_json(decision(index)), Receipt.from_dict(json.loads(json.dumps(r.to_dict())))
        )
    with pytest.raises(VerificationError) as bad:
        verify_receipt(decision(4), receipt)
    assert bad.value.index == 5
    with pytest.raises(VerificationError, match="a key you did not pass"):
        verify_receipt(decision(5), receipt, public_key=Keyring.generate().public_key_bytes())


def test_query_and_stats(decision: DecisionMaker, store_url: str, keyring: Keyring) -> None:
    records = [
        decision(i, action="deny" if i % 3 else "allow", agent="a" if i < 6 else "b")
        for i in range(12)
    ]
    with open_journal(store_url, keyring) as journal:
        journal.append(records)
        journal.append([{"schema": "refusalkit.turn-event/v1", "at": "2026-05-02T15:00:00.000Z"}])
        denied = list(journal.query(action="deny"))
        assert [i for i, _ in denied] == [i for i in range(12) if i % 3]
        assert denied[0][1] == records[1]
        assert [i for i, _ in journal.query(agent="b", reason_code="policy-denied")] == [
            7,
            8,
            10,
            11,
        ]
        assert [i for i, _ in journal.query(matched_rule="approved_workspace", limit=2)] == [0, 3]
        assert [i for i, _ in journal.query(session="s-1")] == [1, 4, 7, 10]
        window = journal.query(since="2026-05-02T14:00:03.000Z", until="2026-05-02T14:00:05.000Z")
        assert [i for i, _ in window] == [3, 4, 5]
        assert [i for i, _ in journal.query(schema="refusalkit.turn-event/v1")] == [12]
        stats = journal.stats()
        assert stats["total"] == 13
        assert stats["by_action"] == {"allow": 4, "deny": 8, "-": 1}
        assert stats["by_reason_code"]["policy-denied"] == 8
        assert stats["by_rule"] == {"approved_workspace": 4, "sensitive_path": 8, "-": 1}
        assert journal.stats(since="2026-05-02T14:00:10.000Z")["total"] == 3


def test_proof_requests_outside_the_log_are_refused(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(i) for i in range(4)])
        for call in (
            lambda: journal.inclusion_proof(4),
            lambda: journal.inclusion_proof(3, 3),
            lambda: journal.inclusion_proof(0, 5),
            lambda: journal.consistency_proof(0),
            lambda: journal.consistency_proof(3, 2),
            lambda: journal.consistency_proof(1, 9),
            lambda: journal.entries(2, 9),
            lambda: journal.receipt(4),
        ):
            with pytest.raises(ProofError):
                call()


def test_origin_mismatch_and_wrong_keyring(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring, origin="example.com/a") as journal:
        journal.append([decision(0)])
        journal.checkpoint()
    with pytest.raises(StoreError, match=r"example\.com/a"):
        open_journal(store_url, keyring, origin="example.com/b")
    stranger = Keyring.generate()
    mine = NoteVerifier.for_key("example.com/a", keyring.public_key_bytes()).key_id
    theirs = NoteVerifier.for_key("example.com/a", stranger.public_key_bytes()).key_id
    with open_journal(store_url, stranger) as journal:
        for act in (journal.checkpoint, lambda: journal.append([decision(1)])):
            with pytest.raises(KeyringError, match="is not the key that signed") as refused:
                act()
            assert f"example.com/a+{mine:08x}" in refused.value.message
            assert f"example.com/a+{theirs:08x}" in refused.value.message
        assert journal.size() == 1  # the other keyring appended nothing
        with pytest.raises(UntrustedKeyError) as failed:
            journal.verify()
        assert failed.value.message == (
            "checkpoint #1 is signed by a key you did not pass: signed by "
            f"example.com/a+{mine:08x}; you passed example.com/a+{theirs:08x}"
        )
        assert "not tampering" in (failed.value.hint or "")
        assert failed.value.exit_code == 1


def test_rotated_keyring_keeps_verifying(
    decision: DecisionMaker, store_url: str, keyring: Keyring
) -> None:
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(0)])
        journal.checkpoint()
    rotated = keyring.rotate_signing()
    with open_journal(store_url, rotated) as journal:
        journal.append([decision(1)])
        journal.checkpoint()
        report = journal.verify()
        assert report.checkpoints == 2
        assert report.size == 2


def test_bad_records_are_refused(store_url: str, keyring: Keyring) -> None:
    with open_journal(store_url, keyring) as journal:
        with pytest.raises(UsageError, match="not one record"):
            journal.append({"schema": "x"})  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="record 1"):
            journal.append([{"a": 1}, ["not", "an", "object"]])  # type: ignore[list-item]
        with pytest.raises(UsageError, match="RFC 8785"):
            journal.append([{"a": 2**60}])
        with pytest.raises(UsageError, match="origin"):
            open_journal(store_url, keyring, origin="has space")
        assert journal.size() == 0


def test_a_proof_reads_logarithmically_many_rows(
    decision: DecisionMaker, store_url: str, keyring: Keyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    from refusalkit.journal import _store, _store_postgres, _store_sqlite  # noqa: PLC0415

    reads: list[int] = []

    def counting(wanted: Any, rows: Any) -> Any:
        reads.append(len(rows))
        return _store.pick_nodes(wanted, rows)

    for module in (_store_sqlite, _store_postgres):
        monkeypatch.setattr(module, "pick_nodes", counting)
    n = 1500
    with open_journal(store_url, keyring) as journal:
        journal.append([decision(i) for i in range(n)])
        for index in (0, 377, 1024, n - 1):
            reads.clear()
            journal.inclusion_proof(index)
            assert 0 < sum(reads) <= 2 * n.bit_length()
        for old in (1, 333, 1024, n - 1):
            reads.clear()
            journal.consistency_proof(old)
            assert 0 < sum(reads) <= 2 * n.bit_length()


def test_readers_do_not_create_a_missing_store(
    store_url: str, keyring: Keyring, decision: DecisionMaker, tmp_path: Path
) -> None:
    if store_url.startswith("postgresql://"):
        expected = "not a refusalkit journal"  # a database without the journal's tables
    else:
        store_url = str(tmp_path / "sub" / "typo.db")
        expected = "no journal at"
    with pytest.raises(StoreError, match=expected):
        open_journal(store_url, keyring, create=False)
    assert not _exists(store_url)
    with open_journal(store_url, keyring) as journal:  # the default still creates it
        journal.append([decision(0)])
    assert _exists(store_url)
    with open_journal(store_url, keyring, create=False) as journal:
        assert journal.size() == 1
        assert journal.verify().size == 1


def _exists(store_url: str) -> bool:
    """Whether the store exists: the SQLite file (or its folder), or any PostgreSQL table."""
    if not store_url.startswith("postgresql://"):
        return Path(store_url).parent.exists()
    import psycopg  # noqa: PLC0415 (only for the PostgreSQL run)

    with psycopg.connect(store_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return bool(rows[0][0])
