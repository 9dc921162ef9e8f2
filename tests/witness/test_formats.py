"""Cosignatures and add-checkpoint bodies: C2SP's published examples, round trips, and
Hypothesis over untrusted input (request bodies, cosignature lines); the witness's answers to
each case the spec names, decided in-process."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteSignature,
    NoteVerifier,
    leaf_hash,
    open_checkpoint,
    parse_note,
)
from refusalkit.journal._checkpoint import sign_checkpoint
from refusalkit.journal._tree import EMPTY_ROOT, root_of_leaves
from refusalkit.keyring import Keyring
from refusalkit.witness import (
    AddCheckpoint,
    CosignerKey,
    RequestFormatError,
    Witness,
    WitnessDir,
    cosign,
    parse_cosignature,
    verify_cosignatures,
)
from refusalkit.witness._cosignature import cosigned_message

ORIGIN = "example.com/log"


@pytest.fixture(scope="module")
def examples(vectors: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((vectors / "c2sp" / "cosignature.json").read_text())
    return data


def test_c2sp_cosignature_example_parses(examples: dict[str, str]) -> None:
    text, signatures = parse_note(examples["cosigned_checkpoint"])
    log_sig, witness_sig = signatures
    assert log_sig.name == "example.com/behind-the-sofa"
    cosignature = parse_cosignature(witness_sig)
    assert cosignature.name == "witness.example.com/w1"
    assert cosignature.timestamp == 1679315147
    assert len(cosignature.signature) == 64
    # the spec's signed message for it is exactly what we sign
    assert (
        cosigned_message(text, cosignature.timestamp).decode()
        == (examples["signed_message_example"])
    )
    with pytest.raises(VerificationError, match="not an Ed25519 cosignature"):
        parse_cosignature(log_sig)  # a plain note signature has no timestamp


def test_c2sp_add_checkpoint_example_parses(examples: dict[str, str]) -> None:
    request = AddCheckpoint.parse(examples["add_checkpoint_request"].encode())
    assert request.old == 20852014
    assert len(request.proof) == 4
    assert request.note.startswith("example.com/behind-the-sofa\n20852163\n")
    assert request.to_body().decode() == examples["add_checkpoint_request"]


def test_cosigner_key_id_uses_type_0x04(examples: dict[str, str]) -> None:
    key = Keyring.generate().signing_key()
    raw = key.public_key().public_bytes_raw()
    cosigner = CosignerKey.for_key("witness.example/w1", raw)
    plain = NoteVerifier.for_key("witness.example/w1", raw)
    assert cosigner.key_id != plain.key_id  # same key, other algorithm byte
    assert CosignerKey.parse(cosigner.vkey) == cosigner
    with pytest.raises(UsageError, match=r"not an Ed25519 cosignature \(type 0x04\) key"):
        CosignerKey.parse(plain.vkey)


def test_cosign_and_verify_round_trip() -> None:
    log_key, witness_key = Keyring.generate().signing_key(), Keyring.generate().signing_key()
    checkpoint = Checkpoint(ORIGIN, 3, root_of_leaves([leaf_hash(b"%d" % i) for i in range(3)]))
    note = sign_checkpoint(checkpoint, log_key)
    line = cosign(checkpoint.body(), "witness.example/w1", witness_key, 1_700_000_000)
    cosigned = note + line.line()
    trusted = CosignerKey.for_key("witness.example/w1", witness_key.public_key().public_bytes_raw())
    [found] = verify_cosignatures(cosigned, [trusted])
    assert found.timestamp == 1_700_000_000
    stranger = CosignerKey.for_key("witness.example/w2", log_key.public_key().public_bytes_raw())
    assert verify_cosignatures(cosigned, [stranger]) == []  # unknown keys are ignored
    forged = NoteSignature(line.name, line.key_id, line.signature[:8] + bytes(64))
    with pytest.raises(VerificationError, match=r"cosignature of witness witness\.example/w1"):
        verify_cosignatures(note + forged.line(), [trusted])


@given(st.binary(max_size=600))
def test_request_parser_rejects_garbage_with_its_own_error(body: bytes) -> None:
    try:
        request = AddCheckpoint.parse(body)
    except RequestFormatError:
        return
    assert request.to_body() == body


@given(
    st.integers(min_value=0, max_value=2**63),
    st.lists(st.binary(min_size=32, max_size=32), max_size=63),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
)
def test_request_round_trip(old: int, proof: list[bytes], note: str) -> None:
    request = AddCheckpoint(old, tuple(proof), note)
    assert AddCheckpoint.parse(request.to_body()) == request


def test_request_limits() -> None:
    too_long = AddCheckpoint(1, tuple(bytes(32) for _ in range(64)), "x\n")
    with pytest.raises(RequestFormatError, match="more than 63"):
        AddCheckpoint.parse(too_long.to_body())
    with pytest.raises(RequestFormatError, match="not 'old <size>'"):
        AddCheckpoint.parse(b"old 01\n\nx\n")
    with pytest.raises(RequestFormatError, match="not a 32-byte hash"):
        AddCheckpoint.parse(b"old 1\n" + base64.b64encode(bytes(31)) + b"\n\nx\n")


@given(st.binary(min_size=8, max_size=120), st.text(min_size=1, max_size=20))
def test_cosignature_line_parser_never_crashes(raw: bytes, name: str) -> None:
    sig = NoteSignature(name, 1, raw)
    try:
        parsed = parse_cosignature(sig)
    except VerificationError:
        return
    assert len(raw) == 72
    assert parsed.timestamp < 2**63


# the witness's decisions, as C2SP tlog-witness orders them -----------------------------------


@pytest.fixture
def witness(tmp_path: Path) -> tuple[Witness, Keyring]:
    log = Keyring.generate()
    directory = WitnessDir.init(tmp_path / "w", "witness.example/w1")
    directory.add_log(ORIGIN, NoteVerifier.for_key(ORIGIN, log.public_key_bytes()).vkey)
    return Witness(directory, clock=lambda: 1_700_000_000.0), log


def _tree(n: int, salt: bytes = b"") -> tuple[list[bytes], Checkpoint]:
    leaves = [leaf_hash(salt + b"%d" % i) for i in range(n)]
    return leaves, Checkpoint(ORIGIN, n, root_of_leaves(leaves) if n else EMPTY_ROOT)


def _ask(witness: Witness, old: int, proof: list[bytes], note: str) -> tuple[int, str]:
    answer = witness.add_checkpoint(AddCheckpoint(old, tuple(proof), note).to_body())
    return answer.status, answer.body.decode()


def test_witness_answers_each_case(witness: tuple[Witness, Keyring]) -> None:
    w, log = witness
    _, cp4 = _tree(4)
    note4 = sign_checkpoint(cp4, log.signing_key())
    assert w.add_checkpoint(b"nonsense")[0] == 400
    assert _ask(w, 5, [], note4)[0] == 400  # old above the checkpoint's size
    other = sign_checkpoint(Checkpoint("example.com/other", 4, cp4.root), log.signing_key())
    assert _ask(w, 0, [], other)[0] == 404
    assert _ask(w, 0, [], sign_checkpoint(cp4, Keyring.generate().signing_key()))[0] == 403
    assert _ask(w, 0, [bytes(32)], note4)[0] == 422  # a proof where none belongs
    bad_empty = sign_checkpoint(Checkpoint(ORIGIN, 0, bytes(32)), log.signing_key())
    assert _ask(w, 0, [], bad_empty)[0] == 422
    status, body = _ask(w, 0, [], note4)
    assert status == 200
    assert body.startswith("\u2014 witness.example/w1 ")
    answer = w.add_checkpoint(AddCheckpoint(0, (), note4).to_body())
    assert (answer.status, answer.content_type, answer.body) == (409, "text/x.tlog.size", b"4\n")
    _, fork = _tree(4, b"fork")
    assert _ask(w, 4, [], sign_checkpoint(fork, log.signing_key()))[0] == 422
    _, cp6 = _tree(6, b"other")
    assert _ask(w, 4, [bytes(32)], sign_checkpoint(cp6, log.signing_key()))[0] == 422
    assert w.directory.latest(ORIGIN) == cp4  # nothing refused was recorded


def test_signature_lines_rerender_byte_for_byte(vectors: Path, examples: dict[str, str]) -> None:
    """Storing cosignatures re-renders every line: Go sumdb/note and C2SP notes survive it."""
    notes = json.loads((vectors / "c2sp" / "notes.json").read_text())
    go = notes["go_note"]
    samples = [
        go["text"] + "\n" + go["peter_sig"] + go["enoch_sig"],
        notes["sumdb_checkpoint"]["note"],
        notes["signed_note_spec"]["note"],
        examples["cosigned_checkpoint"],
    ]
    for note in samples:
        text, signatures = parse_note(note)
        assert f"{text}\n{''.join(s.line() for s in signatures)}" == note


def test_a_cosigned_go_checkpoint_still_opens_under_the_log_key(vectors: Path) -> None:
    sumdb = json.loads((vectors / "c2sp" / "notes.json").read_text())["sumdb_checkpoint"]
    witness_key = Keyring.generate().signing_key()
    text, _ = parse_note(sumdb["note"])
    cosigned = sumdb["note"] + cosign(text, "witness.example/w1", witness_key, 1_700_000_000).line()
    log = NoteVerifier.parse(sumdb["vkey"])
    assert open_checkpoint(cosigned, [log]).size == int(sumdb["size"])  # the cosignature is ignored
    trusted = CosignerKey.for_key("witness.example/w1", witness_key.public_key().public_bytes_raw())
    assert [c.name for c in verify_cosignatures(cosigned, [trusted])] == ["witness.example/w1"]
    assert verify_cosignatures(sumdb["note"], [trusted]) == []  # Go's own line is not a cosignature
