"""The keyring file: generation, 0600 permissions, rotation, and clear errors."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from refusalkit.errors import KeyringError
from refusalkit.keyring import (
    KEYRING_SCHEMA,
    Keyring,
    default_keyring_path,
    resolve_keyring,
    signing_key_id,
)


def test_saved_keyring_is_private_and_loads_back(tmp_path: Path) -> None:
    ring = Keyring.generate()
    path = ring.save(tmp_path / "k.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Keyring.load(path) == ring


def test_keyring_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = Keyring.generate().save(tmp_path / "k.json")
    path.chmod(0o644)
    with pytest.raises(KeyringError, match="readable by others") as info:
        Keyring.load(path)
    assert "chmod 600" in info.value.hint


def test_rotation_keeps_old_ids_usable() -> None:
    ring = Keyring.generate()
    token = ring.redactor().token("credential-file", "/home/u/.ssh/id_rsa")
    rotated = ring.rotate_redaction()
    assert rotated.redaction_active == "k2"
    assert rotated.redactor("k1").token("credential-file", "/home/u/.ssh/id_rsa") == token
    assert rotated.redactor().token("credential-file", "/home/u/.ssh/id_rsa") != token
    signed = rotated.rotate_signing()
    assert set(signed.signing_keys) > set(ring.signing_keys)  # the old signing key stays


def test_signing_key_ids_are_fingerprints_not_counters() -> None:
    # every keyring's first key was "s1": another keyring's process looked like the same signer
    first, second = Keyring.generate(), Keyring.generate()
    assert first.signing_active != second.signing_active
    for ring in (first, second, first.rotate_signing()):
        kid = ring.signing_active
        digest = hashlib.sha256(ring.public_key_bytes(kid)).hexdigest()
        assert kid == "s-" + digest[:16] == signing_key_id(ring.signing_keys[kid])


def test_keyrings_with_counter_ids_still_load_and_rotate(tmp_path: Path) -> None:
    old = Keyring({"k1": bytes(32)}, "k1", {"s1": bytes(range(32))}, "s1")
    path = old.save(tmp_path / "old.json")
    loaded = Keyring.load(path)
    assert loaded.signing_active == "s1"
    rotated = loaded.rotate_signing()
    assert rotated.signing_active.startswith("s-")
    assert rotated.public_key_bytes("s1") == old.public_key_bytes("s1")


def test_signing_key_is_ed25519() -> None:
    ring = Keyring.generate()
    signature = ring.signing_key().sign(b"note")
    ring.public_key().verify(signature, b"note")
    assert len(ring.public_key_bytes()) == 32


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "is not JSON"),
        (json.dumps({"schema": "other"}), "not a refusalkit.keyring/v1 file"),
        (json.dumps({"schema": KEYRING_SCHEMA}), "missing"),
        (
            json.dumps(
                {"schema": KEYRING_SCHEMA, "redaction": {"active": "k1", "keys": {"k1": "abc"}}}
            ),
            "not valid base64|must be 32 bytes",
        ),
        (
            json.dumps({"schema": KEYRING_SCHEMA, "redaction": {"active": "k9", "keys": {}}}),
            "no redaction key 'k9'",
        ),
    ],
)
def test_bad_keyring_files_name_the_problem(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "k.json"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(KeyringError, match=problem):
        Keyring.load(path)


def test_missing_explicit_keyring_is_an_error_not_a_new_key(tmp_path: Path) -> None:
    with pytest.raises(KeyringError, match="no keyring at"):
        resolve_keyring(tmp_path / "typo.json", create=True)
    assert not (tmp_path / "typo.json").exists()


def test_default_keyring_is_created_once_in_the_data_dir() -> None:
    first, where = resolve_keyring(None, create=True)
    assert where == default_keyring_path()
    assert str(where).startswith(os.environ["XDG_DATA_HOME"])
    second, _ = resolve_keyring(None, create=True)
    assert first == second


def test_environment_selects_the_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = Keyring.generate()
    path = ring.save(tmp_path / "env.json")
    monkeypatch.setenv("REFUSALKIT_KEYRING", str(path))
    assert resolve_keyring(None)[0] == ring
