"""Side doors around the witness checks, each done as the attacker would: SQL on the store, a
reordered bundle, a fake witness on loopback, a copied state file, a second server process and a
flood of idle connections. Every test fails without the fix it names."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.errors import UsageError
from refusalkit.journal import NoteSignature, open_journal, parse_note
from refusalkit.keyring import Keyring
from refusalkit.witness import AddCheckpoint, CosignerKey, Witness, WitnessDir
from support.stores import store_url as shared_store_url
from support.witnesses import WitnessProcess

ORIGIN = "example.com/log"
Run = Callable[..., Any]
store_url = shared_store_url  # the fixture: a store on each backend


@pytest.fixture
def run(keyring_path: Path) -> Run:
    def invoke(*args: str, stdin: str | None = None) -> Any:
        return CliRunner().invoke(app, [*args, "--keyring", str(keyring_path)], input=stdin)

    return invoke


def _grow(run: Run, store: str, start: int, end: int) -> str:
    lines = "".join(json.dumps({"schema": "t/v1", "n": i}) + "\n" for i in range(start, end))
    assert run("journal", "append", store, "-", "--origin", ORIGIN, stdin=lines).exit_code == 0
    signed = run("journal", "checkpoint", store)
    assert signed.exit_code == 0, signed.output
    return str(signed.stdout)


def _accept(run: Run, directory: Path, store: str) -> None:
    vkey = run("journal", "public-key", store).stdout.strip()
    added = CliRunner().invoke(
        app, ["witness", "add-log", str(directory), "--origin", ORIGIN, "--public-key", vkey]
    )
    assert added.exit_code == 0, added.output


def _witnessed(run: Run, store: str, w: WitnessProcess) -> Any:
    return run("journal", "witness", store, "--witness", w.url, "--witness-key", w.vkey)


def _sql(store: str, sql: str, *params: Any) -> list[Any]:
    """Run SQL on the store as its holder would (``?`` placeholders)."""
    if store.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415 (PostgreSQL runs only)

        with psycopg.connect(store, autocommit=True) as conn:
            cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []
    import sqlite3  # noqa: PLC0415

    db = sqlite3.connect(store, isolation_level=None)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def _move_to_end(store: str, size: int) -> None:
    """Make the checkpoint of ``size`` the last-listed one, keeping every row count and
    sequence number: the rows' contents are rotated."""
    rows = _sql(store, "SELECT seq, size, note FROM journal_checkpoint ORDER BY seq")
    moved = [r for r in rows if r[1] != size] + [r for r in rows if r[1] == size]
    for (seq, _, _), (_, new_size, note) in zip(rows, moved, strict=True):
        _sql(store, "UPDATE journal_checkpoint SET size = ?, note = ? WHERE seq = ?",
             new_size, note, seq)  # fmt: skip


def test_quorum_is_counted_on_the_head_not_the_last_listed_checkpoint(
    run: Run, store_url: str, witnesses: Callable[[str], WitnessProcess], tmp_path: Path
) -> None:
    w1 = witnesses("w1")
    _grow(run, store_url, 0, 4)
    _accept(run, w1.directory, store_url)
    assert _witnessed(run, store_url, w1).exit_code == 0
    _grow(run, store_url, 4, 10)  # the head (size 10) is not witnessed
    # the store holder moves the old, witnessed size-4 checkpoint to the end of the list
    _move_to_end(store_url, 4)
    bundle = tmp_path / "bundle.json"
    assert run("journal", "export", store_url, "--out", str(bundle)).exit_code == 0
    for target in (store_url, "--bundle"):
        args = [target, str(bundle)] if target == "--bundle" else [target]
        checked = run("journal", "verify", *args, "--witness-key", w1.vkey, "--quorum", "1")
        assert checked.exit_code == 1, checked.output
        assert "witnessed up to 4 of 10 entries" in checked.output
        assert "the head checkpoint (size 10) has 0 valid cosignature(s)" in checked.output
    data = json.loads(bundle.read_text())
    data["checkpoints"] = sorted(data["checkpoints"], key=lambda n: -int(n.split("\n")[1]))
    bundle.write_text(json.dumps(data))
    reordered = run("journal", "verify", "--bundle", str(bundle), "--witness-key", w1.vkey)
    assert reordered.exit_code == 1, reordered.output
    assert _witnessed(run, store_url, w1).exit_code == 0
    covered = run("journal", "verify", store_url, "--witness-key", w1.vkey, "--quorum", "1")
    assert covered.exit_code == 0, covered.output
    assert "witnessed up to 10 of 10 entries; cosigned by: witness.example/w1" in covered.stdout


def test_one_witness_relabelled_under_a_second_name_counts_once(
    run: Run, store_url: str, witnesses: Callable[[str], WitnessProcess]
) -> None:
    w1 = witnesses("w1")
    _grow(run, store_url, 0, 3)
    _accept(run, w1.directory, store_url)
    assert _witnessed(run, store_url, w1).exit_code == 0
    real = CosignerKey.parse(w1.vkey)
    alias = CosignerKey.for_key("witness.example/w2", real.public_key)
    with open_journal(store_url, Keyring.generate(), create=False) as journal:
        note = journal.latest_checkpoint()
        assert note is not None
        text, lines = parse_note(note)
        mine = next(line for line in lines if line.name == real.name)
        relabelled = NoteSignature(alias.name, alias.key_id, mine.signature)
        journal.add_cosignatures(f"{text}\n{relabelled.line()}")
    twice = run(
        "journal", "verify", store_url, "--witness-key", w1.vkey,
        "--witness-key", alias.vkey, "--quorum", "2",
    )  # fmt: skip
    assert twice.exit_code != 0, twice.output
    assert "needs at least 2 distinct witness keys" in twice.output


class _Liar:
    """A fake witness on loopback: answers every add-checkpoint with crafted lines."""

    def __init__(self, lines: list[str]) -> None:
        body = "".join(lines).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def liar() -> Iterator[Callable[[list[str]], _Liar]]:
    made: list[_Liar] = []

    def make(lines: list[str]) -> _Liar:
        made.append(_Liar(lines))
        return made[-1]

    yield make
    for fake in made:
        fake.server.shutdown()
        fake.server.server_close()


def test_a_malicious_witness_cannot_plant_lines_that_break_an_honest_log(
    run: Run,
    store_url: str,
    witnesses: Callable[[str], WitnessProcess],
    liar: Callable[[list[str]], _Liar],
    tmp_path: Path,
) -> None:
    honest = witnesses("w1")
    note = _grow(run, store_url, 0, 3)
    _accept(run, honest.directory, store_url)
    log_line = next(line for line in parse_note(note)[1])
    w1 = CosignerKey.parse(honest.vkey)
    garbage = bytes(72)
    evil_dir = tmp_path / "evil"
    evil = WitnessDir.init(evil_dir, "witness.example/evil").cosigner_key()
    fake = liar([
        NoteSignature(log_line.name, log_line.key_id, bytes(64)).line(),  # the log's own key
        NoteSignature(w1.name, w1.key_id, garbage).line(),  # the honest witness's name and id
    ])  # fmt: skip
    asked = run("journal", "witness", store_url, "--witness", fake.url, "--witness-key", evil.vkey)
    assert asked.exit_code == 1  # nothing it said is a cosignature by the key it was asked under
    assert asked.output.count("dropped") == 2
    with open_journal(store_url, Keyring.generate(), create=False) as journal:
        assert journal.latest_checkpoint() == note  # nothing was stored
    assert run("journal", "verify", store_url).exit_code == 0
    assert _witnessed(run, store_url, honest).exit_code == 0
    ok = run("journal", "verify", store_url, "--witness-key", honest.vkey)
    assert ok.exit_code == 0, ok.output


def test_witness_without_its_key_is_refused(run: Run, store_url: str) -> None:
    _grow(run, store_url, 0, 2)
    keyless = run("journal", "witness", store_url, "--witness", "http://127.0.0.1:9")
    assert keyless.exit_code == 2
    assert "--witness-key" in keyless.output


def _damage(directory: Path) -> None:
    for slot in (directory / "state").glob("*.json.*"):
        slot.write_text(slot.read_text().replace("example", "exampl3"))


def test_damaged_witness_state_fails_closed_and_is_restored_by_the_operator(
    run: Run, store_url: str, witnesses: Callable[[str], WitnessProcess], tmp_path: Path
) -> None:
    w1 = witnesses("w1")
    first = _grow(run, store_url, 0, 3)
    _accept(run, w1.directory, store_url)
    assert _witnessed(run, store_url, w1).exit_code == 0
    _damage(w1.directory)
    # read as "never cosigned", a fork from size 0 would be cosigned: it is a 500 instead
    answer = httpx.post(f"{w1.url}/add-checkpoint", content=AddCheckpoint(0, (), first).to_body())
    assert answer.status_code == 500
    with pytest.raises(UsageError, match=r"witness state of 'example\.com/log' is damaged") as e:
        Witness(WitnessDir(w1.directory)).add_checkpoint(AddCheckpoint(0, (), first).to_body())
    assert "witness restore-state" in (e.value.hint or "")
    held = tmp_path / "held.note"
    with open_journal(store_url, Keyring.generate(), create=False) as journal:
        held.write_text(journal.latest_checkpoint() or "")
    restored = CliRunner().invoke(
        app, ["witness", "restore-state", str(w1.directory), "--checkpoint", str(held)]
    )
    assert restored.exit_code == 0, restored.output
    again = httpx.post(f"{w1.url}/add-checkpoint", content=AddCheckpoint(0, (), first).to_body())
    assert (again.status_code, again.text) == (409, "3\n")


def test_a_second_server_on_one_directory_refuses_to_start(
    witnesses: Callable[[str], WitnessProcess],
) -> None:
    w1 = witnesses("w1")
    with pytest.raises(RuntimeError, match="another witness process serves"):
        WitnessProcess(w1.directory).start()


def test_idle_connections_cannot_starve_an_honest_request(
    run: Run, store_url: str, tmp_path: Path
) -> None:
    directory = tmp_path / "w1"
    WitnessDir.init(directory, "witness.example/w1")
    w1 = WitnessProcess(directory).start(20.0, "--read-timeout", "0.5", "--max-connections", "8")
    try:
        _grow(run, store_url, 0, 3)
        _accept(run, directory, store_url)
        host, port = w1.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(256)]
        heard = []
        for sock in idle:  # every idle connection is closed by the server: capped or timed out
            sock.settimeout(15.0)
            heard.append(sock.recv(200))
            sock.close()
        assert all(h == b"" or h.startswith(b"HTTP/1.1 503") for h in heard)
        assert _witnessed(run, store_url, w1).exit_code == 0
    finally:
        w1.kill()
