"""Bad input gets a specific error, never a traceback and never a silent pass."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import StoreError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteVerifier,
    open_checkpoint,
    open_journal,
    open_note,
    verify_receipt,
)
from refusalkit.journal._checkpoint import sign_checkpoint
from refusalkit.keyring import Keyring

DecisionMaker = Callable[..., dict[str, Any]]


def test_corrupt_file_as_store(tmp_path: Path, keyring: Keyring) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("just some text, not a journal\n")
    with pytest.raises(StoreError, match="not a refusalkit journal"):
        open_journal(bogus, keyring)
    assert bogus.read_text() == "just some text, not a journal\n"


def test_truncated_sqlite_file_as_store(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    good = tmp_path / "j.db"
    with open_journal(good, keyring) as journal:
        journal.append([decision(i) for i in range(200)])
    broken = tmp_path / "broken.db"
    broken.write_bytes(good.read_bytes()[:4096] + b"\xff" * 4096)
    with pytest.raises(StoreError), open_journal(broken, keyring) as journal:
        journal.verify()


def test_foreign_sqlite_database_as_store(tmp_path: Path, keyring: Keyring) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreError, match="not a refusalkit journal"):
        open_journal(other, keyring)
    with sqlite3.connect(other) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert tables == {"users"}


def test_directory_as_store(tmp_path: Path, keyring: Keyring) -> None:
    with pytest.raises(StoreError, match="directory"):
        open_journal(tmp_path, keyring)


@pytest.mark.postgres
def test_foreign_postgres_database(postgres_url: str, keyring: Keyring) -> None:
    import psycopg  # noqa: PLC0415 (only when PostgreSQL runs)

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id int)")
    with pytest.raises(StoreError, match="not a refusalkit journal"):
        open_journal(postgres_url, keyring)


@pytest.mark.postgres
def test_unreachable_postgres(postgres_url: str, keyring: Keyring) -> None:
    missing = postgres_url.rsplit("/", 1)[0] + "/no_such_database_here"
    with pytest.raises(StoreError, match="cannot connect"):
        open_journal(missing, keyring)


def _receipt_setup(tmp_path: Path, keyring: Keyring, decision: DecisionMaker) -> Any:
    with open_journal(tmp_path / "j.db", keyring, origin="example.com/log") as journal:
        journal.append([decision(i) for i in range(9)])
        return journal.receipt(4)


def test_receipt_with_the_wrong_key(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    receipt = _receipt_setup(tmp_path, keyring, decision)
    with pytest.raises(
        VerificationError, match=r"a key you did not pass: signed by example\.com/log\+"
    ):
        verify_receipt(decision(4), receipt, public_key=Keyring.generate().public_key_bytes())


def test_receipt_with_a_proof_for_the_wrong_size(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    receipt = _receipt_setup(tmp_path, keyring, decision)
    with pytest.raises(VerificationError, match="proof is for size 8") as failed:
        verify_receipt(decision(4), replace(receipt, tree_size=8))
    assert failed.value.index == 4


def test_receipt_with_a_checkpoint_from_another_origin(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    receipt = _receipt_setup(tmp_path, keyring, decision)
    other = sign_checkpoint(
        Checkpoint("example.com/other", 9, b"\x00" * 32), keyring.signing_key(), "example.com/log"
    )
    with pytest.raises(VerificationError, match=r"from origin 'example\.com/other'"):
        verify_receipt(decision(4), replace(receipt, checkpoint=other))


def test_receipt_with_a_tampered_proof(
    tmp_path: Path, keyring: Keyring, decision: DecisionMaker
) -> None:
    receipt = _receipt_setup(tmp_path, keyring, decision)
    hashes = list(receipt.hashes)
    hashes[0] = "00" * 32
    with pytest.raises(VerificationError, match="does not lead to the root"):
        verify_receipt(decision(4), replace(receipt, hashes=tuple(hashes)))
    with pytest.raises(VerificationError, match="not hex"):
        verify_receipt(decision(4), replace(receipt, hashes=("zz",)))


def test_checkpoint_origin_is_checked(keyring: Keyring) -> None:
    note = sign_checkpoint(Checkpoint("example.com/a", 1, b"\x01" * 32), keyring.signing_key())
    trusted = [NoteVerifier.for_key("example.com/a", keyring.public_key_bytes())]
    assert open_checkpoint(note, trusted, origin="example.com/a").size == 1
    with pytest.raises(VerificationError, match="from origin") as failed:
        open_checkpoint(note, trusted, origin="example.com/b")
    assert "another log" in failed.value.hint


@pytest.mark.parametrize(
    "note",
    [
        "",
        "no blank line\n",
        "text\n\n\u2014 name\n",
        "text\n\n\u2014 name !!!notbase64\n",
        "text\n\n\u2014 name AAAA\n",
        "text\n\n\u2014 name AAAAAAAA",
        "text\x07\n\n\u2014 name AAAAAAAA\n",
    ],
)
def test_malformed_notes(note: str, keyring: Keyring) -> None:
    trusted = [NoteVerifier.for_key("name", keyring.public_key_bytes())]
    with pytest.raises(VerificationError):
        open_note(note, trusted)
