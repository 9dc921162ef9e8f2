"""The keyring file: generation, 0600 permissions, rotation, and clear errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from refusalkit.errors import KeyringError
from refusalkit.keyring import KEYRING_SCHEMA, Keyring, default_keyring_path, resolve_keyring


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
    assert rotated.rotate_signing().signing_active == "s2"


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
