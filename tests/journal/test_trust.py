"""Attacks by whoever holds the store (but not the signing key), on SQLite and PostgreSQL.

Each attack is done as a store holder would: SQL on the database (rewriting entries *and* their
leaf and node hashes consistently, deleting checkpoints, the checkpoint tally and the signing
metadata), or copying an older database file back. Each is caught: by the signer's refusal to
sign (its state lives beside the keyring, outside the store), or by ``verify`` given a checkpoint
held outside the store. A compromised signer with a fresh state file signs a fork; a checkpoint
held from before turns that into printed evidence of equivocation.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusalkit._durable import SlotFile
from refusalkit.errors import StoreError, VerificationError
from refusalkit.journal import (
    EquivocationError,
    NotAnExtensionError,
    leaf_hash,
    open_journal,
    parse_checkpoint_body,
    parse_note,
)
from refusalkit.journal._records import FIELDS, index_fields
from refusalkit.journal._signer_state import SignerState
from refusalkit.journal._store import plan_nodes
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

SqlRunner = Callable[..., list[Any]]
DecisionMaker = Callable[..., dict[str, Any]]
N = 12
ORIGIN_OF_SIGNED = "example.com/log"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """The signer state directory (beside a keyring file, as the CLI keeps it)."""
    return tmp_path / "keyring.json.signer"


@pytest.fixture
def signed(store_url: str, keyring: Keyring, state: Path, decision: DecisionMaker) -> str:
    """A journal of N decisions, checkpointed at 5 and N by a signer that keeps state."""
    with open_journal(store_url, keyring, origin="example.com/log", signer_state=state) as j:
        j.append([decision(i) for i in range(5)])
        j.checkpoint()
        j.append([decision(i) for i in range(5, N)])
        return j.checkpoint()


def _wipe_signatures(sql: SqlRunner, store_url: str, keys: bool = True) -> None:
    """Remove the traces that the log was signed: checkpoints, their tally (and sequence),
    and with ``keys`` the signing keys recorded in the metadata."""
    sql("DELETE FROM journal_checkpoint")
    sql("DELETE FROM journal_meta WHERE key IN (?, ?)", "checkpoints", "keys" if keys else "-")
    if not store_url.startswith("postgresql://"):
        sql("DELETE FROM sqlite_sequence")


def _reset_tally(sql: SqlRunner, store_url: str) -> None:
    """Make the checkpoint tally (and SQLite's sequence) agree with the rows left."""
    left = len(sql("SELECT seq FROM journal_checkpoint"))
    sql("UPDATE journal_meta SET value = ? WHERE key = 'checkpoints'", str(left))
    if not store_url.startswith("postgresql://"):
        sql("UPDATE sqlite_sequence SET seq = ?", left)


def _forge(sql: SqlRunner, records: list[dict[str, Any]]) -> None:
    """Replace every entry with ``records``, with correct leaf and node hashes and head."""
    data = [canonical_json(r) for r in records]
    leaves = [leaf_hash(d) for d in data]
    nodes = plan_nodes(0, [], leaves)
    sql("DELETE FROM journal_entry")
    columns = ", ".join(FIELDS)
    marks = ", ".join("?" for _ in FIELDS)
    for i, (record, raw, leaf, node) in enumerate(zip(records, data, leaves, nodes, strict=True)):
        sql(
            f"INSERT INTO journal_entry (idx, data, leaf, {columns}, nodes) "
            f"VALUES (?, ?, ?, {marks}, ?)",
            i,
            raw,
            leaf,
            *index_fields(record),
            node,
        )
    sql("UPDATE journal_head SET size = ? WHERE id = 1", len(records))


def _edited(decision: DecisionMaker, at: int, n: int = N) -> list[dict[str, Any]]:
    records = [decision(i) for i in range(n)]
    records[at] = decision(at, action="allow")
    return records


def test_untouched_store_signs_and_verifies_against_its_anchor(
    signed: str, store_url: str, keyring: Keyring, state: Path
) -> None:
    with open_journal(store_url, keyring, signer_state=state) as j:
        assert j.checkpoint() == signed  # nothing grew: the stored note comes back
        report = j.verify(anchors=[("held", signed)])
    assert (report.size, report.checkpoints) == (N, 2)


def test_edit_rewritten_consistently_is_refused_by_the_signer(
    signed: str,
    store_url: str,
    keyring: Keyring,
    state: Path,
    raw_sql: SqlRunner,
    decision: DecisionMaker,
) -> None:
    _forge(raw_sql, _edited(decision, 3))
    _wipe_signatures(raw_sql, store_url)
    with open_journal(store_url, keyring, signer_state=state) as j:
        with pytest.raises(NotAnExtensionError) as refused:
            j.checkpoint()
        assert j.latest_checkpoint() is None  # nothing was signed
        with pytest.raises(VerificationError, match="does not extend the trusted checkpoint held"):
            j.verify(anchors=[("held", signed)])
    message = refused.value.message
    assert "refusing to sign" in message
    assert f"(size {N}, root" in message
    assert "does not extend the last checkpoint" in message
    assert refused.value.exit_code == 1


def test_deleted_checkpoints_with_their_tally_are_an_error(
    signed: str, store_url: str, keyring: Keyring, raw_sql: SqlRunner
) -> None:
    _wipe_signatures(raw_sql, store_url, keys=False)
    with open_journal(store_url, keyring) as j, pytest.raises(VerificationError) as failed:
        j.verify()
    assert "a key signed this log, but no checkpoint is stored" in failed.value.message


def test_truncation_is_refused_and_caught_by_an_anchor(
    signed: str, store_url: str, keyring: Keyring, state: Path, raw_sql: SqlRunner
) -> None:
    raw_sql("DELETE FROM journal_entry WHERE idx >= 7")
    raw_sql("UPDATE journal_head SET size = 7 WHERE id = 1")
    raw_sql("DELETE FROM journal_checkpoint WHERE size > 7")
    _reset_tally(raw_sql, store_url)
    with open_journal(store_url, keyring, signer_state=state) as j:
        with pytest.raises(NotAnExtensionError, match="the tree is smaller"):
            j.checkpoint()
        with pytest.raises(
            VerificationError,
            match=f"the log holds 7 entries but the trusted checkpoint held has size {N}",
        ):
            j.verify(anchors=[("held", signed)])


def _back_up(store_url: str, tmp_path: Path) -> Path:
    """A backup as its holder would take it: a copy of the file (SQLite), ``pg_dump``."""
    if not store_url.startswith("postgresql://"):
        shutil.copyfile(store_url, tmp_path / "backup.db")
        return tmp_path / "backup.db"
    target = tmp_path / "backup.dump"
    subprocess.run(["pg_dump", "-Fc", "-f", str(target), store_url], check=True)
    return target


def _restore(store_url: str, backup: Path) -> None:
    """Put the backup back: copy the file over the store, or ``pg_restore --clean``."""
    if not store_url.startswith("postgresql://"):
        shutil.copyfile(backup, store_url)
        for suffix in ("-wal", "-shm"):
            Path(store_url + suffix).unlink(missing_ok=True)
        return
    restore = ["pg_restore", "--clean", "--if-exists", "--single-transaction", "-d", store_url]
    subprocess.run([*restore, str(backup)], check=True)


def test_rollback_to_a_backup_is_refused_and_caught(
    store_url: str, keyring: Keyring, state: Path, decision: DecisionMaker, tmp_path: Path
) -> None:
    with open_journal(store_url, keyring, origin="example.com/log", signer_state=state) as j:
        j.append([decision(i) for i in range(5)])
        old = j.checkpoint()
        j.store.maintain(force=True)
        backup = _back_up(store_url, tmp_path)
        j.append([decision(i) for i in range(5, N)])
        new = j.checkpoint()
    _restore(store_url, backup)
    with open_journal(store_url, keyring, signer_state=state) as j:
        assert j.verify().size == 5  # self-consistent: nothing inside the store betrays it
        assert j.latest_checkpoint() == old
        with pytest.raises(NotAnExtensionError, match=f"size {N}, root"):
            j.checkpoint()
        with pytest.raises(VerificationError, match="truncated or rolled back"):
            j.verify(anchors=[("held", new)])


def test_fork_is_refused_by_the_signer(
    signed: str,
    store_url: str,
    keyring: Keyring,
    state: Path,
    raw_sql: SqlRunner,
    decision: DecisionMaker,
) -> None:
    _forge(raw_sql, [*(decision(i) for i in range(5)), *(decision(100 + i) for i in range(9))])
    raw_sql("DELETE FROM journal_checkpoint WHERE size > 5")
    _reset_tally(raw_sql, store_url)
    with open_journal(store_url, keyring, signer_state=state) as j:
        assert j.verify().size == 14
        with pytest.raises(NotAnExtensionError, match="proof from size 12 to 14 does not verify"):
            j.checkpoint()


def test_missing_signer_state_needs_adopt(
    signed: str, store_url: str, keyring: Keyring, tmp_path: Path
) -> None:
    fresh = tmp_path / "elsewhere.signer"
    with open_journal(store_url, keyring, signer_state=fresh) as j:
        with pytest.raises(StoreError, match="did not create or adopt it") as e:
            j.checkpoint(adopt=True)  # a signer directory without the origin: adopt it first
        assert "--new-origin" in (e.value.hint or "")
        with pytest.raises(StoreError, match="the store says this journal was signed before") as e:
            j.checkpoint(new_origin=True)
        assert "--adopt" in (e.value.hint or "")
        assert j.checkpoint(adopt=True) == signed
    [state] = [SignerState(fresh, ORIGIN_OF_SIGNED)]
    remembered = state.load()
    assert remembered is not None
    assert remembered[1] == signed


def test_compromised_signer_with_fresh_state_leaves_evidence(
    signed: str,
    store_url: str,
    keyring: Keyring,
    raw_sql: SqlRunner,
    decision: DecisionMaker,
    tmp_path: Path,
) -> None:
    _forge(raw_sql, _edited(decision, 2))
    _wipe_signatures(raw_sql, store_url)
    with open_journal(store_url, keyring, signer_state=tmp_path / "fresh.signer") as j:
        forged = j.checkpoint(new_origin=True)  # the key holder signs the fork on purpose
        with pytest.raises(EquivocationError) as caught:
            j.verify(anchors=[("held", signed)])
    evidence = caught.value.evidence
    assert evidence.first[1] == signed
    assert evidence.second[1] == forged
    text = evidence.render()
    assert signed.rstrip("\n") in text
    assert forged.rstrip("\n") in text
    held, fork = (
        parse_checkpoint_body(parse_note(signed)[0]),
        parse_checkpoint_body(parse_note(forged)[0]),
    )
    assert held.size == fork.size == N
    assert held.root != fork.root
    assert "equivocation" in caught.value.message
    assert caught.value.exit_code == 1


def test_slot_file_survives_a_torn_write(tmp_path: Path) -> None:
    slots = SlotFile(tmp_path / "state.json")
    assert slots.read() is None
    slots.write("first")
    slots.write("second")
    assert slots.read() == "second"
    newest = max(slots.paths, key=lambda p: json.loads(p.read_text())["seq"])
    newest.write_bytes(newest.read_bytes()[:20])  # a crash mid-write tears only this slot
    assert slots.read() == "first"
    slots.write("third")  # goes to the torn slot's place: the older one
    assert slots.read() == "third"
    newest.write_text(newest.read_text().replace("third", "thirD"))  # a flipped byte
    assert slots.read() == "first"


# The side doors around those checks: each attack as its finding describes it, through SQL on the
# store and the CLI an operator runs.


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner  # noqa: PLC0415

    from refusalkit.cli import app  # noqa: PLC0415

    return CliRunner().invoke(app, list(args))


def test_store_rebuilt_under_a_look_alike_origin_gets_no_signature(
    signed: str,
    store_url: str,
    keyring: Keyring,
    keyring_path: Path,
    state: Path,
    raw_sql: SqlRunner,
    decision: DecisionMaker,
) -> None:
    # the store holder flips one deny to allow, renames the log to a look-alike origin and
    # deletes the checkpoints and the key record: to the signer, a log it never signed
    _forge(raw_sql, _edited(decision, 3))
    raw_sql("UPDATE journal_meta SET value = ? WHERE key = 'origin'", "example.com/1og")
    _wipe_signatures(raw_sql, store_url)
    with open_journal(store_url, keyring, signer_state=state) as j:
        with pytest.raises(StoreError, match=r"'example\.com/1og': this keyring") as e:
            j.checkpoint()
        assert "its origins: 'example.com/log'" in e.value.message
        assert "--new-origin" in (e.value.hint or "")
        assert j.latest_checkpoint() is None
    signing = _cli("journal", "checkpoint", store_url, "--keyring", str(keyring_path))
    assert signing.exit_code == 2, signing.output
    verifying = _cli("journal", "verify", store_url, "--keyring", str(keyring_path))
    assert verifying.exit_code == 1, verifying.output
    assert "origin 'example.com/1og' is not one this keyring created or adopted" in (
        verifying.output
    )


def test_damaged_signer_state_fails_closed_until_adopted(
    signed: str,
    store_url: str,
    keyring: Keyring,
    keyring_path: Path,
    state: Path,
    raw_sql: SqlRunner,
    decision: DecisionMaker,
) -> None:
    slots = SlotFile(SignerState(state, ORIGIN_OF_SIGNED).path).paths
    for slot in slots:  # every slot fails its checksum
        slot.write_text(
            slot.read_text().replace('"seq"', '"seq" ', 1).replace("example", "exampl3")
        )
    _forge(raw_sql, _edited(decision, 3))
    _wipe_signatures(raw_sql, store_url)  # the fork looks never signed, to the store
    with open_journal(store_url, keyring, signer_state=state) as j:
        with pytest.raises(StoreError, match="the signer state is damaged") as e:
            j.checkpoint()
        assert "--adopt" in (e.value.hint or "")
        assert j.latest_checkpoint() is None
    signing = _cli("journal", "checkpoint", store_url, "--keyring", str(keyring_path))
    assert signing.exit_code == 2
    assert "the signer state is damaged" in signing.output


def test_damaged_signer_state_is_recovered_by_adopt(
    signed: str, store_url: str, keyring: Keyring, state: Path
) -> None:
    for slot in SlotFile(SignerState(state, ORIGIN_OF_SIGNED).path).paths:
        slot.write_bytes(slot.read_bytes()[:30])
    with open_journal(store_url, keyring, signer_state=state) as j:
        with pytest.raises(StoreError, match="damaged"):
            j.checkpoint()
        assert j.checkpoint(adopt=True) == signed  # after a full verify, the store's latest
    remembered = SignerState(state, ORIGIN_OF_SIGNED).load()
    assert remembered is not None
    assert remembered[1] == signed


def test_another_keyring_is_refused_at_the_first_append(
    signed: str, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an MCP client launching a process with a trimmed environment: another keyring
    other = Keyring.generate().save(tmp_path / "other" / "keyring.json")
    monkeypatch.setenv("REFUSALKIT_KEYRING", str(other))
    line = json.dumps({"schema": "t/v1", "n": 1}) + "\n"
    from typer.testing import CliRunner  # noqa: PLC0415

    from refusalkit.cli import app  # noqa: PLC0415

    appended = CliRunner().invoke(app, ["journal", "append", store_url, "-"], input=line)
    assert appended.exit_code == 2, appended.output
    assert "is not the key that signed journal 'example.com/log'" in appended.output
    mine = open_journal(store_url, Keyring.load(other), create=False)
    with mine as j:
        assert j.size() == N
    assert "created a new keyring" not in appended.output  # none was created
