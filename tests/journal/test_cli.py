"""``refusalkit journal ...`` end to end through the real CLI app."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.journal import (
    NoteVerifier,
    canonical_bytes,
    leaf_hash,
    root_of_leaves,
    verify_inclusion,
)
from refusalkit.keyring import Keyring

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
    leaves = [leaf_hash(canonical_bytes(r)) for r in records]
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
