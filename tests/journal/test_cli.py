"""``refusalkit journal ...`` end to end through the real CLI app."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.journal import NoteVerifier, leaf_hash, verify_inclusion
from refusalkit.journal._tree import root_of_leaves
from refusalkit.keyring import Keyring, default_keyring_path
from refusalkit.model import canonical_json

DecisionMaker = Callable[..., dict[str, Any]]


@pytest.fixture
def run(keyring_path: Path) -> Callable[..., Any]:
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(app, ["journal", *args, "--keyring", str(keyring_path)], input=stdin)

    return invoke


@pytest.fixture
def filled(
    run: Callable[..., Any], tmp_path: Path, decision: DecisionMaker
) -> tuple[str, list[dict[str, Any]]]:
    store = str(tmp_path / "j.db")
    records = [
        decision(i, action="deny" if i % 2 else "allow", agent="a" if i < 4 else "b")
        for i in range(9)
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:5]))
    first = run("append", store, str(tmp_path / "in.jsonl"), "--origin", "example.com/cli")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {"appended": 5, "first": 0, "last": 4, "size": 5}
    more = run("append", store, "-", stdin="\n".join(json.dumps(r) for r in records[5:]) + "\n")
    assert json.loads(more.stdout) == {"appended": 4, "first": 5, "last": 8, "size": 9}
    return store, records


def test_checkpoint_and_proofs(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]], keyring: Keyring
) -> None:
    store, records = filled
    note = run("checkpoint", store)
    assert note.exit_code == 0
    assert note.stdout.startswith("example.com/cli\n9\n")
    leaves = [leaf_hash(canonical_json(r)) for r in records]
    proof = json.loads(run("prove", "inclusion", store, "--index", "3").stdout)
    assert set(proof) == {"index", "tree_size", "leaf_hash", "hashes"}
    hashes = [bytes.fromhex(h) for h in proof["hashes"]]
    verify_inclusion(3, 9, leaves[3], hashes, root_of_leaves(leaves))
    old = json.loads(run("prove", "consistency", store, "--old", "4", "--new", "9").stdout)
    assert old["old"] == 4
    assert old["new"] == 9
    assert all(len(h) == 64 for h in old["hashes"])
    bad = run("prove", "inclusion", store, "--index", "9")
    assert bad.exit_code == 2
    assert "index 9" in bad.stderr
    assert "Traceback" not in bad.output


def test_verify_passes_and_fails_naming_the_first_bad_index(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]]
) -> None:
    store, _ = filled
    assert run("checkpoint", store).exit_code == 0
    ok = run("verify", store)
    assert ok.exit_code == 0, ok.output
    assert "9 entries" in ok.stdout
    report = json.loads(run("verify", store, "--json").stdout)
    assert report["ok"]
    assert report["size"] == 9
    assert report["checkpoints"] == 1
    with sqlite3.connect(store) as db:
        db.execute("UPDATE journal_entry SET data = CAST('{}' AS BLOB) WHERE idx = 6")
    failed = run("verify", store)
    assert failed.exit_code == 1
    assert "first bad index: 6" in failed.stderr
    assert "Traceback" not in failed.output


def test_query_and_stats(run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]]) -> None:
    store, records = filled
    out = run("query", store, "--action", "deny", "--agent", "b")
    assert [json.loads(line) for line in out.stdout.splitlines()] == [records[5], records[7]]
    limited = run("query", store, "--rule", "approved_workspace", "--limit", "2")
    assert len(limited.stdout.splitlines()) == 2
    stats = json.loads(run("stats", store, "--json").stdout)
    assert stats["total"] == 9
    assert stats["by_action"] == {"allow": 5, "deny": 4}
    table = run("stats", store)
    assert table.exit_code == 0
    assert "policy-denied" in table.stdout
    assert "sensitive_path" in table.stdout


def test_export_and_verify_bundle(
    run: Callable[..., Any],
    filled: tuple[str, list[dict[str, Any]]],
    tmp_path: Path,
    keyring: Keyring,
) -> None:
    store, _ = filled
    run("checkpoint", store)
    bundle = tmp_path / "audit.json"
    assert run("export", store, "--out", str(bundle)).exit_code == 0
    vkey = NoteVerifier.for_key("example.com/cli", keyring.public_key_bytes()).vkey
    assert run("public-key", store).stdout == vkey + "\n"
    pinned = run("verify", "--bundle", str(bundle), "--public-key", vkey)
    assert pinned.exit_code == 0, pinned.output
    stranger = NoteVerifier.for_key("example.com/cli", Keyring.generate().public_key_bytes()).vkey
    assert run("verify", "--bundle", str(bundle), "--public-key", stranger).exit_code == 1
    data = json.loads(bundle.read_text())
    data["entries"][2] = data["entries"][3]
    bundle.write_text(json.dumps(data))
    tampered = run("verify", "--bundle", str(bundle))
    assert tampered.exit_code == 1
    assert "first bad index: 2" in tampered.stderr


def test_bad_inputs_exit_with_a_message(run: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"ok": 1}\nnot json\n')
    bad = run("append", str(tmp_path / "j.db"), str(tmp_path / "bad.jsonl"))
    assert bad.exit_code == 2
    assert "bad.jsonl:2" in bad.stderr
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("hello")
    result = run("verify", str(foreign))
    assert result.exit_code == 2
    assert "not a refusalkit journal" in result.stderr
    assert run("verify").exit_code == 2
    assert "Traceback" not in bad.output + result.output


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "STORE"],
        ["stats", "STORE"],
        ["query", "STORE"],
        ["checkpoint", "STORE"],
        ["export", "STORE", "--out", "OUT"],
        ["prove", "inclusion", "STORE", "--index", "0"],
        ["prove", "consistency", "STORE", "--old", "1"],
    ],
)
def test_readers_refuse_a_missing_store_and_create_nothing(
    run: Callable[..., Any], tmp_path: Path, args: list[str]
) -> None:
    store = tmp_path / "typo.db"
    names = {"STORE": str(store), "OUT": str(tmp_path / "out.json")}
    result = run(*(names.get(a, a) for a in args))
    assert result.exit_code == 2
    assert f"no journal at {store}" in result.stderr
    assert not store.exists()
    assert not (tmp_path / "out.json").exists()
    assert "Traceback" not in result.output


def test_append_still_creates_the_store(
    run: Callable[..., Any], tmp_path: Path, decision: DecisionMaker
) -> None:
    store = tmp_path / "new" / "j.db"
    assert run("append", str(store), "-", stdin=json.dumps(decision(0)) + "\n").exit_code == 0
    assert run("verify", str(store)).exit_code == 0


@pytest.mark.parametrize("bad", ["yesterday", "2026-05-02T14:00:00", "2026-05-02T14:00Z"])
def test_time_bounds_must_be_rfc3339(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]], bad: str
) -> None:
    store, _ = filled
    for command in ("query", "stats"):
        result = run(command, store, "--since", bad)
        assert result.exit_code == 2, result.output
        assert f"--since {bad!r} is not an RFC 3339 time" in result.stderr
        assert "hint:" in result.stderr


def test_time_bounds_with_offsets_compare_as_instants(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]]
) -> None:
    store, records = filled  # decided at 2026-05-02T14:00:00Z + i seconds, i = 0..8
    out = run("query", store, "--since", "2026-05-02T16:00:05+02:00")
    assert [json.loads(line) for line in out.stdout.splitlines()] == records[5:]
    stats = json.loads(run("stats", store, "--until", "2026-05-02T09:00:02-05:00", "--json").stdout)
    assert stats["total"] == 3
    day = json.loads(
        run("stats", store, "--since", "2026-05-02", "--until", "2026-05-02", "--json").stdout
    )
    assert day["total"] == 9


def test_bundle_is_checked_against_the_keyring_not_its_own_key(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    store, _ = filled
    bundle = tmp_path / "audit.json"
    assert run("export", store, "--out", str(bundle)).exit_code == 0
    assert run("verify", "--bundle", str(bundle)).exit_code == 0  # the signer's keyring
    other = Keyring.generate().save(tmp_path / "other.json")
    runner = CliRunner()
    wrong = runner.invoke(
        app, ["journal", "verify", "--bundle", str(bundle), "--keyring", str(other)]
    )
    assert wrong.exit_code == 1
    assert "the bundle's checkpoints are signed by a key you did not pass: signed by " in (
        wrong.stderr
    )
    assert "not tampering" in wrong.stderr
    assert "--public-key" in wrong.stderr
    none = runner.invoke(app, ["journal", "verify", "--bundle", str(bundle)])  # no keyring at all
    assert none.exit_code == 1
    assert "no trusted key" in none.stderr
    assert "--public-key" in none.stderr
    assert not default_keyring_path().exists()


def test_forged_bundle_fails_on_the_command_line(
    run: Callable[..., Any], filled: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    store, _ = filled
    bundle = tmp_path / "audit.json"
    assert run("export", store, "--out", str(bundle)).exit_code == 0
    data = json.loads(bundle.read_text())
    record = json.loads(base64.b64decode(data["entries"][3]))
    forged = canonical_json({**record, "action": "allow"})
    data["entries"][3] = base64.b64encode(forged).decode()
    data["leaf_hashes"][3] = leaf_hash(forged).hex()
    data["checkpoints"], data["consistency"] = [], []
    bundle.write_text(json.dumps(data))
    result = run("verify", "--bundle", str(bundle))
    assert result.exit_code == 1
    assert "first bad index: 0" in result.stderr
    assert "ok" not in result.stdout
