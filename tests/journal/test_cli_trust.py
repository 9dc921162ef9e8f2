"""The trust verbs through the real CLI: each error case with its message and exit code.

Signing (refusal, lost state, ``--adopt``, ``--out``), anchored verification, the key mismatch
told apart from tampering, and offline checks of what the service hands out (``--receipt``,
``--proof`` with ``--checkpoint``) with the key string ``journal public-key`` prints.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteVerifier,
    Receipt,
    open_journal,
    verify_proof,
    verify_receipt,
)
from refusalkit.journal._checkpoint import sign_checkpoint
from refusalkit.keyring import Keyring, default_keyring_path

ORIGIN = "example.com/log"
Run = Callable[..., Any]


@pytest.fixture
def run(keyring_path: Path) -> Run:
    runner = CliRunner()

    def invoke(*args: str, keyring: Path = keyring_path, stdin: str | None = None) -> Any:
        return runner.invoke(app, ["journal", *args, "--keyring", str(keyring)], input=stdin)

    return invoke


def _lines(start: int, end: int) -> str:
    return "".join(json.dumps({"schema": "t/v1", "n": i}) + "\n" for i in range(start, end))


@pytest.fixture
def store(run: Run, tmp_path: Path) -> str:
    path = str(tmp_path / "journal.db")
    assert run("append", path, "-", "--origin", ORIGIN, stdin=_lines(0, 5)).exit_code == 0
    return path


def _vkey(keyring: Keyring) -> str:
    return NoteVerifier.for_key(ORIGIN, keyring.public_key_bytes()).vkey


def _id(keyring: Keyring) -> str:
    return f"{ORIGIN}+{NoteVerifier.for_key(ORIGIN, keyring.public_key_bytes()).key_id:08x}"


def test_checkpoint_out_writes_the_note(run: Run, store: str, tmp_path: Path) -> None:
    out = tmp_path / "cp.note"
    signed = run("checkpoint", store, "--out", str(out))
    assert signed.exit_code == 0
    assert out.read_text() == signed.stdout


def test_rollback_is_refused_and_caught_with_the_held_checkpoint(
    run: Run, store: str, tmp_path: Path
) -> None:
    held = tmp_path / "held.note"
    assert run("checkpoint", store).exit_code == 0
    backup = tmp_path / "backup.db"
    with open_journal(store, Keyring.generate()) as journal:
        journal.store.maintain(force=True)
    shutil.copyfile(store, backup)
    assert run("append", store, "-", stdin=_lines(5, 9)).exit_code == 0
    assert run("checkpoint", store, "--out", str(held)).exit_code == 0
    shutil.copyfile(backup, store)
    for suffix in ("-wal", "-shm"):
        Path(store + suffix).unlink(missing_ok=True)
    refused = run("checkpoint", store)
    assert refused.exit_code == 1
    assert "refusing to sign: the store's tree (size 5, root" in refused.stderr
    assert "does not extend the last checkpoint signed for 'example.com/log' (size 9" in (
        refused.stderr
    )
    vkey = run("public-key", store).stdout.strip()
    caught = run("verify", store, "--trusted-checkpoint", str(held), "--public-key", vkey)
    assert caught.exit_code == 1
    assert f"the trusted checkpoint {held} has size 9: it was truncated or rolled back" in (
        caught.stderr
    )
    # the same for bundles: the rolled-back store still exports (its size-5 checkpoint covers it)
    rolled = tmp_path / "rolled.json"
    assert run("export", store, "--out", str(rolled)).exit_code == 0
    bundle_caught = run("verify", "--bundle", str(rolled), "--trusted-checkpoint", str(held))
    assert bundle_caught.exit_code == 1
    assert "has size 9: it was truncated or rolled back" in bundle_caught.stderr


def test_bundle_extends_a_held_bundle(run: Run, store: str, tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    assert run("export", store, "--out", str(old)).exit_code == 0
    assert run("append", store, "-", stdin=_lines(5, 11)).exit_code == 0
    assert run("export", store, "--out", str(new)).exit_code == 0
    ok = run("verify", "--bundle", str(new), "--trusted-checkpoint", str(old))
    assert ok.exit_code == 0, ok.output
    assert "11 entries, 2 checkpoint(s) verified" in ok.stdout


def test_lost_signer_state_needs_adopt(run: Run, store: str, keyring_path: Path) -> None:
    assert run("checkpoint", store).exit_code == 0
    for state in keyring_path.parent.glob("keyring.json.signer/*.json.*"):
        state.unlink()
    lost = run("checkpoint", store)
    assert lost.exit_code == 2
    assert "the signer has no state for 'example.com/log'" in lost.stderr
    assert "--adopt" in lost.stderr
    adopted = run("checkpoint", store, "--adopt")
    assert adopted.exit_code == 0, adopted.output


def test_store_signed_by_another_keyring_is_a_key_mismatch(
    run: Run, store: str, keyring: Keyring, tmp_path: Path
) -> None:
    assert run("checkpoint", store).exit_code == 0
    other = Keyring.generate()
    wrong = run("verify", store, keyring=other.save(tmp_path / "other.json"))
    assert wrong.exit_code == 1
    assert (
        f"checkpoint #1 is signed by a key you did not pass: signed by {_id(keyring)}; "
        f"you passed {_id(other)}"
    ) in wrong.stderr
    assert "not tampering" in wrong.stderr
    assert "Treat the journal as tampered" not in wrong.stderr
    pinned = run("verify", store, "--public-key", _vkey(keyring), keyring=tmp_path / "other.json")
    assert pinned.exit_code == 0, pinned.output
    examiner = CliRunner().invoke(app, ["journal", "verify", store, "--public-key", _vkey(keyring)])
    assert examiner.exit_code == 0, examiner.output
    assert not default_keyring_path().exists()  # an examiner's verify makes no keyring


def _receipt(store: str, keyring: Keyring, tmp_path: Path, index: int) -> Path:
    with open_journal(store, keyring) as journal:
        found = journal.receipt(index)
        (tmp_path / "entry.json").write_bytes(journal.entries(index, index + 1)[0])
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(found.to_dict()))
    return path


def test_receipt_verifies_offline_with_the_printed_key(
    run: Run, store: str, keyring: Keyring, tmp_path: Path
) -> None:
    receipt = _receipt(store, keyring, tmp_path, 3)
    vkey = run("public-key", store).stdout.strip()
    ok = run("verify", "--receipt", str(receipt), "--public-key", vkey)
    assert ok.exit_code == 0, ok.output
    assert "is in example.com/log at size 5 (receipt verified)" in ok.stdout
    entry = tmp_path / "entry.json"
    assert (
        run(
            "verify", "--receipt", str(receipt), "--entry", str(entry), "--public-key", vkey
        ).exit_code
        == 0
    )
    entry.write_text(json.dumps({"schema": "t/v1", "n": 99}))
    bad = run("verify", "--receipt", str(receipt), "--entry", str(entry), "--public-key", vkey)
    assert bad.exit_code == 1
    assert "entry does not match the receipt's leaf hash (index 3)" in bad.stderr
    stranger = _vkey(Keyring.generate())
    wrong = run("verify", "--receipt", str(receipt), "--public-key", stranger)
    assert wrong.exit_code == 1
    assert "checkpoint is signed by a key you did not pass: signed by" in wrong.stderr
    # the Python API takes the very same string
    verify_receipt(None, Receipt.from_dict(json.loads(receipt.read_text())), public_key=vkey)
    receipt.write_text(json.dumps({"schema": "refusalkit.journal-receipt/v1"}))
    broken = run("verify", "--receipt", str(receipt), "--public-key", vkey)
    assert broken.exit_code == 1
    assert "not a journal receipt: bad or missing 'index'" in broken.stderr
    # what is no receipt at all (the service's 401 body, say) is the wrong file, not tampering
    unauthenticated = {"error": {"code": "unauthenticated", "message": "no API key was sent"}}
    for body, said in (
        (json.dumps(unauthenticated), "an error answer (unauthenticated: no API key was sent)"),
        ("{}", "an object with none of a receipt's fields"),
        ('{"schema": "refusalkit.decision/v1"}', "a refusalkit.decision/v1 record"),
        ("[1, 2]", "a JSON list, not an object"),
        ("Internal Server Error", "it is not JSON"),
    ):
        receipt.write_text(body)
        other = run("verify", "--receipt", str(receipt), "--public-key", vkey)
        assert other.exit_code == 2, other.output
        assert f"{receipt} is not a journal receipt: " in other.stderr
        assert said in other.stderr
        assert "tampered" not in other.stderr
    missing = run("verify", "--receipt", str(tmp_path / "nope.json"), "--public-key", vkey)
    assert missing.exit_code == 2
    assert "cannot read" in missing.stderr


def test_proofs_verify_against_checkpoint_files(run: Run, store: str, tmp_path: Path) -> None:
    old, new = tmp_path / "old.note", tmp_path / "new.json"
    assert run("checkpoint", store, "--out", str(old)).exit_code == 0
    assert run("append", store, "-", stdin=_lines(5, 8)).exit_code == 0
    signed = run("checkpoint", store).stdout
    new.write_text(json.dumps({"checkpoint": signed, "tree_size": 8}))  # the service's shape
    proofs = tmp_path / "inclusion.json"
    proofs.write_text(run("prove", "inclusion", store, "--index", "6").stdout)
    ok = run("verify", "--proof", str(proofs), "--checkpoint", str(new))
    assert ok.exit_code == 0, ok.output
    assert "entry 6 (leaf " in ok.stdout
    wrong_size = run("verify", "--proof", str(proofs), "--checkpoint", str(old))
    assert wrong_size.exit_code == 1
    assert "the proof is for tree size 8, but the checkpoints given have size 5" in (
        wrong_size.stderr
    )
    consistency = tmp_path / "consistency.json"
    consistency.write_text(run("prove", "consistency", store, "--old", "5").stdout)
    both = run(
        "verify", "--proof", str(consistency), "--checkpoint", str(old), "--checkpoint", str(new)
    )
    assert both.exit_code == 0, both.output
    assert "example.com/log at size 8 extends its checkpoint of size 5" in both.stdout
    alone = run("verify", "--proof", str(consistency))
    assert alone.exit_code == 2
    assert "--proof needs the signed checkpoint(s) it is for" in alone.stderr
    two = run("verify", store, "--proof", str(consistency))
    assert two.exit_code == 2
    assert "give one of: STORE, --bundle FILE, --receipt FILE, --proof FILE" in two.stderr


_PROOF_FIELDS = ("index", "tree_size", "leaf_hash", "hashes", "old", "new")


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=70), _nested, max_leaves=12
)


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({}, optional=dict.fromkeys(_PROOF_FIELDS, _JSON)))
def test_untrusted_proof_json_gets_an_error_never_a_traceback(proof: dict[str, Any]) -> None:
    keyring = Keyring.generate()
    note = sign_checkpoint(Checkpoint(ORIGIN, 3, bytes(32)), keyring.signing_key())
    trusted = [NoteVerifier.for_key(ORIGIN, keyring.public_key_bytes())]
    try:
        verify_proof(proof, [note], trusted)
    except (VerificationError, UsageError) as exc:
        assert exc.message  # noqa: PT017 (the point: a typed error with a message, whatever came in)
