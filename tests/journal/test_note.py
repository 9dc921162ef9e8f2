"""C2SP signed-note and tlog-checkpoint against the published examples (tests/vectors/c2sp)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.errors import VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteVerifier,
    open_checkpoint,
    open_note,
    parse_checkpoint_body,
    parse_note,
)
from refusalkit.journal._checkpoint import sign_checkpoint
from refusalkit.journal._note import key_id, sign_note

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors/c2sp/notes.json").read_text(encoding="utf-8")
)
GO = VECTORS["go_note"]


def _peter_key() -> Ed25519PrivateKey:
    seed = base64.b64decode(GO["peter_skey"].split("+", 4)[4])
    assert seed[0] == 1
    return Ed25519PrivateKey.from_private_bytes(seed[1:])


def test_spec_example_verifies() -> None:
    spec = VECTORS["signed_note_spec"]
    verifier = NoteVerifier.parse(spec["vkey"])
    assert verifier.key_id == 0x530D903A
    assert verifier.vkey == spec["vkey"]
    assert open_note(spec["note"], [verifier]).text == spec["text"]
    assert open_note(spec["note"].encode("utf-8"), [verifier]).text == spec["text"]


@pytest.mark.parametrize(
    "change",
    [
        ("example message", "example massage"),
        ("Uw2QOkn8", "Uw2QOkn9"),
        ("This is", "This  is"),
    ],
)
def test_altered_spec_example_fails(change: tuple[str, str]) -> None:
    spec = VECTORS["signed_note_spec"]
    with pytest.raises(VerificationError):
        open_note(spec["note"].replace(*change), [NoteVerifier.parse(spec["vkey"])])


def test_current_spec_example_parses_but_is_never_trusted_without_its_key() -> None:
    current = VECTORS["signed_note_current"]
    text, signatures = parse_note(current["note"])
    assert text == current["text"]  # the text itself has a blank line: the last one separates
    assert [s.name for s in signatures] == [current["key_name"]]
    with pytest.raises(VerificationError, match="no signature by a trusted key"):
        open_note(current["note"], [NoteVerifier.parse(GO["peter_vkey"])])


def test_tlog_checkpoint_spec_example_parses() -> None:
    example = VECTORS["tlog_checkpoint_spec"]
    text, _ = parse_note(example["note"])
    checkpoint = parse_checkpoint_body(text)
    assert (checkpoint.origin, checkpoint.size) == (example["origin"], example["size"])
    assert checkpoint.root == base64.b64decode(example["root"])
    assert checkpoint.body() == text


def test_real_sumdb_checkpoint_verifies() -> None:
    sumdb = VECTORS["sumdb_checkpoint"]
    verifier = NoteVerifier.parse(sumdb["vkey"])
    checkpoint = open_checkpoint(sumdb["note"], [verifier], origin=sumdb["origin"])
    assert checkpoint.size == sumdb["size"]
    with pytest.raises(VerificationError, match="from origin") as failed:
        open_checkpoint(sumdb["note"], [verifier], origin="Go rocks but I might have the wrong ID")
    assert "another log" in failed.value.hint
    with pytest.raises(VerificationError):
        open_checkpoint(sumdb["note"].replace("6476701", "6476702"), [verifier])


def test_go_sign_is_byte_exact() -> None:
    assert (
        sign_note(GO["text"], "PeterNeumann", _peter_key()) == GO["text"] + "\n" + GO["peter_sig"]
    )
    public = NoteVerifier.parse(GO["peter_vkey"]).public_key
    assert key_id("PeterNeumann", public) == 0xC74F20A3


def test_go_open_with_one_two_and_no_trusted_keys() -> None:
    peter, enoch = NoteVerifier.parse(GO["peter_vkey"]), NoteVerifier.parse(GO["enoch_vkey"])
    note = GO["text"] + "\n" + GO["peter_sig"] + GO["enoch_sig"]
    one = open_note(note, [peter])
    assert [s.name for s in one.verified] == ["PeterNeumann"]
    assert [s.name for s in one.unverified] == ["EnochRoot"]
    both = open_note(note, [peter, enoch])
    assert [s.name for s in both.verified] == ["PeterNeumann", "EnochRoot"]
    assert not both.unverified
    with pytest.raises(VerificationError, match="no signature by a trusted key"):
        open_note(note, [])
    with pytest.raises(VerificationError, match="ambiguous"):
        open_note(GO["text"] + "\n" + GO["enoch_sig"], [enoch, peter, enoch])
    duplicated = GO["text"] + "\n" + GO["peter_sig"] * 2 + GO["enoch_sig"] * 2
    assert len(open_note(duplicated, [peter]).verified) == 1


def test_go_bad_signature_from_a_known_key_rejects_the_note() -> None:
    sig = GO["peter_sig"]
    corrupt = GO["text"] + "\n" + sig[:60] + "ABCD" + sig[60:]
    with pytest.raises(VerificationError, match="invalid signature for key PeterNeumann"):
        open_note(corrupt, [NoteVerifier.parse(GO["peter_vkey"])])


def test_go_misnamed_or_rehashed_signature_is_unknown() -> None:
    peter = NoteVerifier.parse(GO["peter_vkey"])
    misnamed = GO["text"] + "\n" + GO["peter_sig"].replace("PeterNeumann", "CarmenSandiego")
    with pytest.raises(VerificationError, match="no signature by a trusted key"):
        open_note(misnamed, [peter])
    rehashed = GO["text"] + "\n" + GO["peter_sig"].replace("x08g", "xxxx")
    with pytest.raises(VerificationError, match="no signature by a trusted key"):
        open_note(rehashed, [peter])


@pytest.mark.parametrize("note", GO["malformed_notes"])
def test_go_malformed_notes(note: str) -> None:
    with pytest.raises(VerificationError, match="malformed"):
        open_note(note, [NoteVerifier.parse(GO["peter_vkey"])])


def test_too_many_signatures() -> None:
    with pytest.raises(VerificationError, match="malformed"):
        open_note(GO["text"] + "\n" + GO["peter_sig"] * 101, [NoteVerifier.parse(GO["peter_vkey"])])


@pytest.mark.parametrize("vkey", GO["bad_vkeys"])
def test_go_bad_verifier_keys(vkey: str) -> None:
    with pytest.raises(VerificationError):
        NoteVerifier.parse(vkey)


def test_mangled_verifier_keys_are_refused() -> None:
    vkey = GO["peter_vkey"]
    for i in range(len(vkey)):
        for mangled in (vkey[:i] + vkey[i + 1 :], vkey[:i] + chr(ord(vkey[i]) + 1) + vkey[i + 1 :]):
            with pytest.raises(VerificationError):
                NoteVerifier.parse(mangled)


@settings(max_examples=50, deadline=None)
@given(
    origin=st.from_regex(r"[a-z0-9.]{1,12}/[a-z0-9]{1,8}", fullmatch=True),
    size=st.integers(0, 2**40),
    root=st.binary(min_size=32, max_size=32),
    flip=st.integers(0, 10_000),
)
def test_checkpoint_round_trip_and_any_changed_character_fails(
    origin: str, size: int, root: bytes, flip: int
) -> None:
    key = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)
    note = sign_checkpoint(Checkpoint(origin, size, root), key)
    trusted = [NoteVerifier.for_key(origin, key.public_key().public_bytes_raw())]
    assert open_checkpoint(note, trusted, origin=origin) == Checkpoint(origin, size, root)
    body_end = len(Checkpoint(origin, size, root).body())
    where = flip % body_end
    changed = note[:where] + ("x" if note[where] != "x" else "y") + note[where + 1 :]
    with pytest.raises(VerificationError):
        open_checkpoint(changed, trusted, origin=origin)
