"""Benchmark of the journal against pymerkle, side by side in the same run.

``python bench/journal.py [--quick]`` measures appends/s on SQLite and PostgreSQL with batches of 1
and 1,000, inclusion and consistency proof times at 10k, 100k and 1M entries, and a full verify at
1M (``--quick`` skips the 1M rows). It also measures what tamper evidence costs: a checkpoint with
the signer-state check (load the state, RFC 9162 consistency proof from the last signed size)
alone, beside pymerkle's consistency proof at that size (the nearest work it does); the whole
checkpoint (the check, signing, the durable state write, the store's commit), whose two fsyncs
bound it (one fsync's cost on this disk is measured in the same run); and a witness cosignature
round trip on loopback (``refusalkit witness serve`` as a real process; pymerkle has no witness, so
that row has no peer), and a first ``journal tiles`` export (C2SP tlog-tiles) beside ``journal
export`` of the same log, entries/s, interleaved per round, medians with their spread. Both sides
append the same decision records: refusalkit takes records (RFC 8785 + leaf hash + tree nodes,
durable: WAL, ``synchronous=FULL``); pymerkle's ``SqliteTree`` takes bytes, so its timed loop
includes serialising each record with ``json.dumps`` (sorted keys), which is cheaper than full RFC
8785. Measurements alternate between the two and the best of three is kept, because a shared machine
is noisy.

pymerkle is GPL: it is never a dependency. This script makes a throw-away venv
(``bench/.pymerkle-venv``), installs pymerkle there and drives it as a subprocess. Results:
``bench/results/journal.json``; ratio = how many times faster refusalkit is.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from refusalkit._durable import SlotFile
from refusalkit.journal import export_bundle, export_tiles, open_journal, signer_state_dir
from refusalkit.keyring import Keyring
from refusalkit.model._canonical import ENCODERS

HERE = Path(__file__).resolve().parent
VENV = HERE / ".pymerkle-venv"
PG_ADMIN = os.environ.get("REFUSALKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ROUNDS = 3
console = Console()

DECISION_CODE = '''
def decision(i):
    """A realistic decision record (docs/design/decision.md), about 700 bytes canonical."""
    return {
        "schema": "refusalkit.decision/v1",
        "decision_id": "0193f1c2-0000-7000-8000-%012d" % i,
        "action": "deny", "reason_code": "policy-denied", "reason_codes_version": 1,
        "matched_rule": "sensitive_path",
        "message": "Writes to credential files are not allowed.", "retryable": False,
        "why_trail": [{"rule": "sensitive_path", "effect": "deny", "matched": True,
                       "decisive": True, "field": "args.path", "field_class": "credential-file",
                       "value": "<redacted:hmac-sha256:k1:9f2a6c0b1d7e4a55>",
                       "test": "glob **/.env"}],
        "policy": {"id": "agent-tools", "version": "v3", "digest": "sha256:" + "ab" * 32},
        "engine": {"name": "refusalkit", "version": "0.1.0"},
        "subject": {"agent": "coder", "session": "s-%d" % (i % 100)},
        "request_digest": "hmac-sha256:k1:%064x" % i,
        "decided_at": "2026-05-02T14:07:22.123Z",
    }
'''
_names: dict[str, Any] = {}
exec(DECISION_CODE, _names)  # the same record code runs in both processes
decision: Callable[[int], dict[str, Any]] = _names["decision"]

PYMERKLE_WORKER = (
    DECISION_CODE
    + r"""
import json, os, random, sys, tempfile, time
from pymerkle import InmemoryTree, SqliteTree

def ser(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

workdir = tempfile.mkdtemp()
proof_tree = None

def appends(batch, total, memory=False):
    records = [decision(i) for i in range(batch)]
    tree = InmemoryTree(algorithm="sha256") if memory else SqliteTree(
        os.path.join(workdir, "a%d.db" % random.randrange(10**9)))
    started = time.perf_counter()
    for _ in range(total // batch):
        if batch == 1:
            tree.append_entry(ser(records[0]))
        else:
            tree.append_entries([ser(r) for r in records])
    return total // batch * batch / (time.perf_counter() - started)

def proofs(size, samples):
    global proof_tree
    if proof_tree is None:
        proof_tree = SqliteTree(os.path.join(workdir, "proofs.db"))
    chunk = [ser(decision(i)) for i in range(10000)]
    while proof_tree.get_size() < size:
        proof_tree.append_entries(chunk)
    rng = random.Random(size)
    started = time.perf_counter()
    for _ in range(samples):
        proof_tree.prove_inclusion(rng.randrange(1, size + 1), size)
    inclusion = (time.perf_counter() - started) / samples * 1e3
    started = time.perf_counter()
    for _ in range(samples):
        proof_tree.prove_consistency(rng.randrange(1, size), size)
    return inclusion, (time.perf_counter() - started) / samples * 1e3

for line in sys.stdin:
    op = json.loads(line)
    if op["op"] == "appends":
        result = appends(op["batch"], op["total"], op.get("memory", False))
    else:
        result = proofs(op["size"], op["samples"])
    print(json.dumps(result), flush=True)
"""
)


class Pymerkle:
    """The pymerkle half, in its own venv and process."""

    def __init__(self) -> None:
        python = VENV / "bin" / "python"
        if not python.exists():
            console.print("creating bench/.pymerkle-venv with pymerkle (GPL, isolated) ...")
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "pymerkle"], check=True)
        self.proc = subprocess.Popen(
            [str(python), "-c", PYMERKLE_WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **op: Any) -> Any:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(op) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _appends(store: str, keyring: Keyring, batch: int, total: int) -> float:
    records = [decision(i) for i in range(batch)]
    with open_journal(store, keyring) as journal:
        started = time.perf_counter()
        for _ in range(total // batch):
            journal.append(records)
        return (total // batch * batch) / (time.perf_counter() - started)


def _pg_database() -> str | None:
    try:
        import psycopg  # noqa: PLC0415 - optional

        name = f"rk_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    except Exception as exc:
        console.print(f"[yellow]PostgreSQL rows skipped: {exc}[/]")
        return None


def _drop(url: str) -> None:
    import psycopg  # noqa: PLC0415 - optional

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def _our_proofs(journal: Any, size: int, samples: int) -> tuple[float, float]:
    rng = random.Random(size)
    started = time.perf_counter()
    for _ in range(samples):
        journal.inclusion_proof(rng.randrange(size), size)
    inclusion = (time.perf_counter() - started) / samples * 1e3
    started = time.perf_counter()
    for _ in range(samples):
        journal.consistency_proof(rng.randrange(1, size), size)
    return inclusion, (time.perf_counter() - started) / samples * 1e3


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _checkpoints(journal: Any, samples: int) -> tuple[float, float]:
    """Median ms of the signer-state check alone (load the state, read the head, build and
    verify the RFC 9162 consistency proof from the last signed size) and of a whole
    ``checkpoint()`` (the check, signing, the durable state write, the store's commit), one entry
    appended before each."""
    checks, totals = [], []
    for i in range(samples):
        journal.append([decision(10_000_000 + i)])
        started = time.perf_counter()
        anchor = journal.signer.load()
        journal._require_extension(anchor[0], journal._head())  # the part timed
        checks.append((time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        journal.checkpoint()
        totals.append((time.perf_counter() - started) * 1e3)
    return _median(checks), _median(totals)


def _durable_writes(workdir: Path, samples: int) -> float:
    """Median ms of one durable state write (a slot written in place, one fsync): the floor
    under a checkpoint's state write and a witness's answer on this disk."""
    slots, times = SlotFile(workdir / "floor.json"), []
    slots.write("x" * 400)
    slots.write("x" * 400)  # both slots exist: every timed write is one fsync
    for _ in range(samples):
        started = time.perf_counter()
        slots.write("x" * 400)
        times.append((time.perf_counter() - started) * 1e3)
    return _median(times)


def _witness_round_trips(workdir: Path, keyring: Keyring, samples: int) -> float:
    """Median ms of one ``add-checkpoint`` round trip to a witness process on 127.0.0.1."""
    import httpx  # noqa: PLC0415

    from refusalkit.journal import NoteVerifier, parse_checkpoint_body, parse_note  # noqa: PLC0415
    from refusalkit.witness import WitnessDir, submit  # noqa: PLC0415

    origin = "bench.example/witnessed"
    witness = WitnessDir.init(workdir / "witness", "bench.example/w1")
    witness.add_log(origin, NoteVerifier.for_key(origin, keyring.public_key_bytes()).vkey)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from refusalkit.cli import main; main()",
            "witness",
            "serve",
            str(witness.root),
            "--port",
            "0",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = proc.stderr.readline().strip().rsplit(" ", 1)[-1]
        store = str(workdir / "witnessed.db")
        times, old = [], 0
        with open_journal(store, keyring, origin=origin) as journal, httpx.Client() as client:

            def proof(a: int, b: int) -> list[bytes]:
                return [bytes.fromhex(h) for h in journal.consistency_proof(a, b)["hashes"]]

            for i in range(samples + 1):
                journal.append([decision(i)])
                note = journal.checkpoint()
                started = time.perf_counter()
                outcome = submit(client, url, note, proof, old=old)
                if i:  # the first opens the connection
                    times.append((time.perf_counter() - started) * 1e3)
                assert outcome.lines, outcome.error
                old = parse_checkpoint_body(parse_note(note)[0]).size
        return _median(times)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _tiles_vs_export(journal: Any, workdir: Path, size: int) -> dict[str, float]:
    """Entries/s of a first ``journal tiles`` export beside ``journal export`` of the same log,
    interleaved in each round; medians with the spread (max - min) / median in %."""
    tiles: list[float] = []
    bundle: list[float] = []
    for r in range(ROUNDS):
        out = workdir / f"tiles-{size}-{r}"
        started = time.perf_counter()
        export_tiles(journal, out)
        tiles.append(size / (time.perf_counter() - started))
        shutil.rmtree(out)
        started = time.perf_counter()
        export_bundle(journal, workdir / f"bundle-{size}-{r}.json")
        bundle.append(size / (time.perf_counter() - started))
        (workdir / f"bundle-{size}-{r}.json").unlink()

    def spread(values: list[float]) -> float:
        return 100 * (max(values) - min(values)) / _median(values)

    return {
        f"tiles export entries/s, {size:,}": _median(tiles),
        f"tiles export spread %, {size:,}": spread(tiles),
        f"journal export (bundle) entries/s, {size:,}": _median(bundle),
        f"journal export spread %, {size:,}": spread(bundle),
    }


def run(quick: bool, workdir: Path) -> tuple[dict[str, float], dict[str, float]]:
    keyring, peer = Keyring.generate(), Pymerkle()
    ours: dict[str, float] = {}
    theirs: dict[str, float] = {}
    n1, n1000 = (200, 20_000) if quick else (500, 50_000)
    try:
        for batch, total in ((1, n1), (1000, n1000)):
            key = f"append/s SQLite, batch {batch}"
            for r in range(ROUNDS):
                mine = _appends(str(workdir / f"a{batch}-{r}.db"), keyring, batch, total)
                ours[key] = max(ours.get(key, 0.0), mine)
                peer_rate = float(peer.ask(op="appends", batch=batch, total=total))
                theirs[key] = max(theirs.get(key, 0.0), peer_rate)
        memory = float(peer.ask(op="appends", batch=1, total=n1000, memory=True))
        theirs["append/s in memory (pymerkle only, not durable)"] = memory
        url = _pg_database()
        if url:
            try:
                for batch, total in ((1, n1), (1000, n1000)):
                    rates = [_appends(url, keyring, batch, total) for _ in range(ROUNDS)]
                    ours[f"append/s PostgreSQL, batch {batch}"] = max(rates)
            finally:
                _drop(url)
        sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
        chunk = [decision(i) for i in range(10_000)]
        state = signer_state_dir(workdir / "keyring.json")
        with open_journal(str(workdir / "proofs.db"), keyring, signer_state=state) as journal:
            for size in sizes:
                while journal.size() < size:
                    journal.append(chunk)
                journal.checkpoint()
                check, whole = _checkpoints(journal, 30)
                ours[f"signer-state check ms, {size:,}"] = check
                ours[f"checkpoint with the check, durable, ms, {size:,}"] = whole
                inc, con = _our_proofs(journal, size, 1000)
                ours[f"inclusion proof ms, {size:,}"] = inc
                ours[f"consistency proof ms, {size:,}"] = con
                ours.update(_tiles_vs_export(journal, workdir, size))
                p_inc, p_con = peer.ask(
                    op="proofs", size=size, samples=30 if size > 100_000 else 100
                )
                theirs[f"inclusion proof ms, {size:,}"] = float(p_inc)
                theirs[f"consistency proof ms, {size:,}"] = float(p_con)
                theirs[f"signer-state check ms, {size:,}"] = float(p_con)
            if not quick:
                journal.checkpoint()
                ours["full verify s, 1,000,000"] = journal.verify().seconds
        ours["witness cosignature round trip ms (loopback)"] = _witness_round_trips(
            workdir, keyring, 50
        )
        ours["one fsync'd state write ms (the disk's floor)"] = _durable_writes(workdir, 30)
    finally:
        peer.close()
    return ours, theirs


def report(ours: dict[str, float], theirs: dict[str, float], quick: bool) -> None:
    table = Table(title="refusalkit journal vs pymerkle (same run, best of 3 alternating)")
    for column in ("metric", "refusalkit", "pymerkle", "ratio (x faster)"):
        table.add_column(column, justify="left" if column == "metric" else "right")

    def fmt(value: float | None) -> str:
        if value is None:
            return "-"
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"

    for key in [*ours, *(k for k in theirs if k not in ours)]:
        mine, peer = ours.get(key), theirs.get(key)
        ratio = ""
        if mine and peer:
            lower_is_better = " ms" in key or " s," in key
            ratio = f"{(peer / mine) if lower_is_better else (mine / peer):.1f}"
        table.add_row(key, fmt(mine), fmt(peer), ratio)
    console.print(table)
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    payload = {
        "quick": quick,
        "canonical_encoder": ENCODERS[0].name,  # the fast RFC 8785 path used (orjson or stdlib)
        "refusalkit": ours,
        "pymerkle": theirs,
    }
    (results / "journal.json").write_text(json.dumps(payload, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description="journal benchmark vs pymerkle")
    parser.add_argument("--quick", action="store_true", help="skip the 1M-entry rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = run(args.quick, Path(tmp))
    report(ours, theirs, args.quick)


if __name__ == "__main__":
    main()
