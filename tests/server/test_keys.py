"""The API keys file: hashed at rest, 0600, atomic, add/list/revoke, and the CLI verbs."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit._internal.keys import hash_key
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.server import KeyStore, Scope, parse_scopes


def test_add_stores_only_the_hash_with_mode_0600(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    record, secret = store.add("ci", {Scope.DECIDE, Scope.READ})
    text = store.path.read_text()
    assert secret not in text
    assert record.hash == hash_key(secret)
    assert record.hash in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert json.loads(text)["schema"] == "refusalkit.service-keys/v1"
    assert len(secret) >= 40
    assert secret.startswith("rk_")


def test_lookup_finds_the_key_and_nothing_else(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    _, secret = store.add("ci", {Scope.DECIDE})
    found = store.lookup(secret)
    assert found is not None
    assert found.name == "ci"
    assert found.allows(Scope.DECIDE)
    assert not found.allows(Scope.READ)
    assert store.lookup(secret + "x") is None
    assert store.lookup("") is None


def test_admin_implies_every_scope(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    record, _ = store.add("root", {Scope.ADMIN})
    assert all(record.allows(scope) for scope in Scope)


def test_revoke_keeps_the_record_and_denies_every_scope(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    _, secret = store.add("ci", {Scope.ADMIN})
    store.revoke("ci")
    other = KeyStore(store.path)  # a second reader (another worker) sees it too
    found = other.lookup(secret)
    assert found is not None
    assert found.revoked is not None
    assert not any(found.allows(scope) for scope in Scope)
    with pytest.raises(UsageError):
        store.revoke("ci")


def test_a_name_cannot_be_reused_while_active(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    store.add("ci", {Scope.READ})
    with pytest.raises(UsageError, match="exists"):
        store.add("ci", {Scope.READ})
    store.revoke("ci")
    store.add("ci", {Scope.READ})
    assert [k.revoked is None for k in store.list_keys()] == [False, True]


def test_a_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    store.add("ci", {Scope.READ})
    store.path.chmod(0o644)
    with pytest.raises(UsageError, match="readable by others"):
        KeyStore(store.path).list_keys()


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text('{"schema": "something-else"}')
    path.chmod(0o600)
    with pytest.raises(UsageError, match="not a refusalkit keys file"):
        KeyStore(path).list_keys()


@pytest.mark.parametrize("bad", ["", "frobnicate", "read,write", " , "])
def test_parse_scopes_refuses_unknown_or_empty(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_scopes(bad)


@settings(max_examples=50, deadline=None)
@given(st.sets(st.sampled_from(list(Scope)), min_size=1))
def test_parse_scopes_round_trips(scopes: set[Scope]) -> None:
    assert parse_scopes(",".join(s.value for s in scopes)) == frozenset(scopes)


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_hash_key_is_stable_and_distinct(value: str) -> None:
    assert hash_key(value) == hash_key(value)
    assert hash_key(value) != hash_key(value + "!")
    assert hash_key(value).startswith("sha256:")
    assert len(hash_key(value)) == 7 + 64


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from refusalkit.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_keys_add_prints_the_key_alone_then_list_and_revoke(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    added = _cli(
        "service", "keys", "add", "ci", "--scopes", "decide,read", "--keys-file", str(keys)
    )
    assert added.returncode == 0, added.stderr
    secret = added.stdout.strip()  # alone on stdout: `KEY=$(...)` needs no pipe to cut it
    assert secret.startswith("rk_")
    assert "\n" not in secret
    assert "added key 'ci' with scopes decide, read" in added.stderr
    found = KeyStore(keys).lookup(secret)
    assert found is not None
    assert found.scopes == {Scope.DECIDE, Scope.READ}

    listed = _cli("service", "keys", "list", "--keys-file", str(keys))
    assert listed.returncode == 0
    assert "ci" in listed.stdout
    assert secret not in listed.stdout

    revoked = _cli("service", "keys", "revoke", "ci", "--keys-file", str(keys))
    assert revoked.returncode == 0
    found = KeyStore(keys).lookup(secret)
    assert found is not None
    assert found.revoked is not None


def test_cli_keys_add_of_a_taken_name_is_refused_unless_replaced(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    first = _cli("service", "keys", "add", "ops", "--keys-file", str(keys)).stdout.strip()
    again = _cli("service", "keys", "add", "ops", "--keys-file", str(keys))
    assert again.returncode == 2
    assert again.stdout == ""  # nothing a `$(...)` could mistake for a key
    assert "has an active key named 'ops'" in again.stderr
    assert "--replace" in again.stderr
    replaced = _cli("service", "keys", "add", "ops", "--replace", "--keys-file", str(keys))
    assert replaced.returncode == 0, replaced.stderr
    store = KeyStore(keys)
    old, new = store.lookup(first), store.lookup(replaced.stdout.strip())
    assert old is not None
    assert old.revoked is not None
    assert new is not None
    assert new.revoked is None
    fresh = _cli("service", "keys", "add", "ci", "--replace", "--keys-file", str(keys))
    assert fresh.returncode == 0  # nothing to replace: it is simply made


def test_cli_keys_add_refuses_an_unknown_scope(tmp_path: Path) -> None:
    result = _cli(
        "service", "keys", "add", "ci", "--scopes", "write", "--keys-file", str(tmp_path / "k.json")
    )
    assert result.returncode == 2
    assert "error:" in result.stderr
    assert "hint:" in result.stderr


def test_cli_serve_without_keys_file_is_a_clear_error(tmp_path: Path) -> None:
    result = _cli(
        "serve", "--policy", str(tmp_path / "p.yaml"), "--journal", str(tmp_path / "j.db")
    )
    assert result.returncode == 2
    assert "no --keys-file" in result.stderr
    assert "--insecure-no-auth" in result.stderr


def test_cli_serve_with_a_bad_pack_names_the_problem(tmp_path: Path) -> None:
    pack = tmp_path / "pack.yaml"
    pack.write_text("policy: broken\nversion: v1\ndefault: maybe\nrules: 7\n")
    ring = Keyring.generate().save(tmp_path / "keyring.json")
    keys = tmp_path / "keys.json"
    KeyStore(keys).add("ci", {Scope.READ})
    result = _cli(
        "serve",
        "--policy",
        str(pack),
        "--journal",
        str(tmp_path / "j.db"),
        "--keys-file",
        str(keys),
        "--keyring",
        str(ring),
        "--port",
        "1",
    )
    assert result.returncode == 2
    assert "error:" in result.stderr
    assert "pack.yaml" in result.stderr
    assert "Traceback" not in result.stderr
