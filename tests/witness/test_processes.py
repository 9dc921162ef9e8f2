"""Real witness processes on 127.0.0.1, driven through the CLI a log operator and an examiner use.

A witness killed with SIGKILL between requests remembers everything it answered; a compromised
signer that signs a fork with a fresh state file gets no cosignature from any witness, and
``verify --witness-key ... --quorum 1`` fails on the fork.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.journal import open_journal, parse_note
from refusalkit.keyring import Keyring
from refusalkit.witness import AddCheckpoint
from support.stores import store_url as shared_store_url

ORIGIN = "example.com/log"
Run = Callable[..., Any]


store_url = shared_store_url  # the fixture: a store on each backend


@pytest.fixture
def store(store_url: str) -> str:
    """A journal store on each backend."""
    return store_url


@pytest.fixture
def run(keyring_path: Path) -> Run:
    runner = CliRunner()

    def invoke(*args: str, keyring: Path = keyring_path, stdin: str | None = None) -> Any:
        return runner.invoke(app, [*args, "--keyring", str(keyring)], input=stdin)

    return invoke


def _records(start: int, end: int, tag: str = "d") -> str:
    return "".join(
        json.dumps({"schema": "t/v1", "tag": tag, "n": i}) + "\n" for i in range(start, end)
    )


def _grow(run: Run, store: str, start: int, end: int) -> str:
    assert (
        run(
            "journal", "append", store, "-", "--origin", ORIGIN, stdin=_records(start, end)
        ).exit_code
        == 0
    )
    signed = run("journal", "checkpoint", store)
    assert signed.exit_code == 0, signed.output
    return str(signed.stdout)


def _collect(run: Run, store: str, *witnesses: Any) -> Any:
    """``journal witness`` asking each of ``witnesses`` under its configured key."""
    pairs = [arg for w in witnesses for arg in ("--witness", w.url, "--witness-key", w.vkey)]
    return run("journal", "witness", store, *pairs)


def _accept(run: Run, witness: Any, store: str) -> None:
    vkey = run("journal", "public-key", store).stdout.strip()
    added = CliRunner().invoke(
        app,
        ["witness", "add-log", str(witness.directory), "--origin", ORIGIN, "--public-key", vkey],
    )
    assert added.exit_code == 0, added.output


def test_witnessed_log_meets_its_quorum_in_store_and_bundle(
    run: Run, store: str, witnesses: Callable[[str], Any], tmp_path: Path
) -> None:
    w1 = witnesses("w1")
    _grow(run, store, 0, 5)
    _accept(run, w1, store)
    done = _collect(run, store, w1)
    assert done.exit_code == 0, done.output
    assert f"cosigned {w1.url}: witness.example/w1" in done.stdout
    _grow(run, store, 5, 9)
    unwitnessed = run("journal", "verify", store, "--witness-key", w1.vkey)
    assert unwitnessed.exit_code == 1
    assert "witnessed up to 5 of 9 entries: the head checkpoint (size 9) has 0 valid" in (
        unwitnessed.output
    )
    assert _collect(run, store, w1).exit_code == 0  # 409, then proof
    ok = run("journal", "verify", store, "--witness-key", w1.vkey, "--quorum", "1")
    assert ok.exit_code == 0, ok.output
    assert "witnessed up to 9 of 9 entries; cosigned by: witness.example/w1" in ok.stdout
    bundle = tmp_path / "audit.json"
    assert run("journal", "export", store, "--out", str(bundle)).exit_code == 0
    carried = run("journal", "verify", "--bundle", str(bundle), "--witness-key", w1.vkey)
    assert carried.exit_code == 0, carried.output
    two = run("journal", "verify", store, "--witness-key", w1.vkey, "--quorum", "2")
    assert two.exit_code == 2
    assert "a quorum of 2 needs at least 2 distinct witness keys" in two.output


def test_sigkill_between_requests_loses_nothing(
    run: Run, tmp_path: Path, witnesses: Callable[[str], Any]
) -> None:
    store = str(tmp_path / "journal.db")
    witness = witnesses("w1")
    _grow(run, store, 0, 2)
    _accept(run, witness, store)
    for round_ in range(4):
        note = _grow(run, store, 2 + 3 * round_, 5 + 3 * round_) if round_ else None
        assert _collect(run, store, witness).exit_code == 0
        witness.kill()  # SIGKILL, right after it answered
        witness.start()
        size = 2 if note is None else int(parse_note(note)[0].split("\n")[1])
        with open_journal(store, Keyring.load(tmp_path / "keyring.json")) as journal:
            latest = journal.latest_checkpoint()
        assert latest is not None
        answer = httpx.post(
            f"{witness.url}/add-checkpoint", content=AddCheckpoint(0, (), latest).to_body()
        )
        assert (answer.status_code, answer.text) == (409, f"{size}\n")
        assert answer.headers["content-type"] == "text/x.tlog.size"


def _forge(store: str, keyring: Keyring, n: int) -> None:
    """Rewrite the store's entries (one changed) with a correct tree, as the key holder would
    before signing the fork: a fresh journal built elsewhere, copied over the store's rows."""
    records = [json.loads(line) for line in _records(0, n).splitlines()]
    records[1]["tag"] = "forged"
    if store.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415 (PostgreSQL runs only)

        with psycopg.connect(store, autocommit=True) as conn:
            conn.execute("DELETE FROM journal_entry")
            conn.execute("DELETE FROM journal_checkpoint")
            conn.execute("UPDATE journal_head SET size = 0")
            conn.execute("DELETE FROM journal_meta WHERE key IN ('checkpoints', 'keys')")
        with open_journal(store, keyring) as journal:
            journal.append(records)
        return
    Path(store).unlink()
    for suffix in ("-wal", "-shm"):
        Path(store + suffix).unlink(missing_ok=True)
    with open_journal(store, keyring, origin=ORIGIN) as journal:
        journal.append(records)


def test_compromised_signer_fork_is_refused_by_every_witness(
    run: Run,
    store: str,
    keyring_path: Path,
    keyring: Keyring,
    witnesses: Callable[[str], Any],
    tmp_path: Path,
) -> None:
    w1, w2 = witnesses("w1"), witnesses("w2")
    honest = _grow(run, store, 0, 6)
    for w in (w1, w2):
        _accept(run, w, store)
    assert _collect(run, store, w1, w2).exit_code == 0
    # the key holder forks the log and signs it with a fresh signer state
    _forge(store, keyring, 6)
    stolen = tmp_path / "stolen" / "keyring.json"
    stolen.parent.mkdir()
    shutil.copy(keyring_path, stolen)
    forged = run("journal", "checkpoint", store, "--new-origin", keyring=stolen)
    assert forged.exit_code == 0, forged.output
    assert forged.stdout != honest
    refused = _collect(run, store, w1, w2)
    assert refused.exit_code == 1
    assert "no witness cosigned the latest checkpoint" in refused.output
    assert refused.output.count("422: not consistent with the size-6 checkpoint cosigned") == 2
    fails = run(
        "journal",
        "verify",
        store,
        "--witness-key",
        w1.vkey,
        "--witness-key",
        w2.vkey,
        "--quorum",
        "1",
        keyring=stolen,
    )
    assert fails.exit_code == 1
    assert "the head checkpoint (size 6) has 0 valid cosignature(s)" in fails.output
    # an examiner holding the honest checkpoint gets printed evidence of the equivocation
    held = tmp_path / "held.note"
    held.write_text(honest)
    caught = run("journal", "verify", store, "--trusted-checkpoint", str(held), keyring=stolen)
    assert caught.exit_code == 1
    assert "equivocation" in caught.output
    assert honest.rstrip("\n") in caught.stdout
    assert forged.stdout.rstrip("\n") in caught.stdout


def test_bad_http_requests_get_answers(witnesses: Callable[[str], Any]) -> None:
    witness = witnesses("w1")
    host, port = witness.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        assert b" 400 " in conn.recv(200).split(b"\r\n")[0]
    answer = httpx.post(f"{witness.url}/add-checkpoint", content=b"old 1\n\nnot a note\n")
    assert answer.status_code == 400
    assert "malformed signed note" in answer.text
    assert httpx.post(f"{witness.url}/other", content=b"x").status_code == 404
