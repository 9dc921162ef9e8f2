"""Benchmark of the journal against pymerkle, side by side in the same run.

``python bench/journal.py [--quick] [--max-size N] [--rounds R]`` measures, in ``R`` rounds
(default 3) with the two sides interleaved inside each round:

- appends/s on SQLite (both) and PostgreSQL (refusalkit only), batches of 1 and 1,000;
- inclusion and consistency proof times at 10k, 100k and 1M entries (``--max-size`` caps the
  sizes; ``--quick`` stops at 100k), and a full verify at the largest size;
- the signer-state check a checkpoint does (load the last signed checkpoint, read the head, build
  the RFC 9162 §2.1.4 consistency proof from the last signed size and verify it) beside the same
  work in pymerkle (read both roots, ``prove_consistency``, ``verify_consistency``), one entry
  appended before each; the whole durable checkpoint; one fsync'd write (the disk's floor);
- a first ``journal tiles`` export (C2SP tlog-tiles) beside ``journal export`` of the same log,
  entries/s, at the largest size;
- the service's tile latency: ``GET /v1/journal/tlog/checkpoint``, a full hash tile and a full
  entry bundle from a real ``refusalkit serve`` (uvicorn) on 127.0.0.1 over the same journal,
  beside reading the same 256 entries through ``GET /v1/journal/entries`` and through
  ``Journal.entries`` (what ``journal export`` reads with), request by request in turn;
- a witness cosignature round trip on loopback (``refusalkit witness serve``; pymerkle has no
  witness, so that row has no peer).

Every row is the median with its min-max over the rounds (throughputs) or over every timed call
(latencies): never a best-of. Both sides append the same decision records: refusalkit takes
records (RFC 8785 + leaf hash + tree nodes, durable: WAL, ``synchronous=FULL``); pymerkle's
``SqliteTree`` takes bytes, so its timed loop includes serialising each record with ``json.dumps``
(sorted keys), which is cheaper than full RFC 8785. The load average is printed and recorded:
figures are ratios beside the peer measured in the same run, never pass/fail.

pymerkle is GPL: it is never a dependency. This script makes a throw-away venv
(``bench/.pymerkle-venv``), installs pymerkle there and drives it as a subprocess. Results:
``bench/results/journal.json``; ratio = how many times faster refusalkit is (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from refusalkit._durable import SlotFile
from refusalkit.journal import (
    export_bundle,
    export_tiles,
    open_journal,
    signer_state_dir,
    tile_path,
)
from refusalkit.journal._signing_rule import check_signing
from refusalkit.journal._tiles import TILE_WIDTH
from refusalkit.keyring import Keyring
from refusalkit.model._canonical import ENCODERS
from refusalkit.server import KeyStore, Scope

HERE = Path(__file__).resolve().parent
VENV = HERE / ".pymerkle-venv"
PG_ADMIN = os.environ.get("REFUSALKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
console = Console(width=150)

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
from pymerkle import InmemoryTree, SqliteTree, verify_consistency

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

def statecheck(samples):
    # ms of each: one entry appended, then read both roots, prove and verify consistency
    tree, times = proof_tree, []
    old = tree.get_size()
    root = getattr(tree, "get_root", None) or tree.get_state
    old_root = root(old)
    for i in range(samples):
        tree.append_entry(ser(decision(10_000_000 + i)))
        started = time.perf_counter()
        new = tree.get_size()
        new_root = root(new)
        proof = tree.prove_consistency(old, new)
        verify_consistency(old_root, new_root, proof)
        times.append((time.perf_counter() - started) * 1e3)
        old, old_root = new, new_root
    return times

for line in sys.stdin:
    op = json.loads(line)
    if op["op"] == "appends":
        result = appends(op["batch"], op["total"], op.get("memory", False))
    elif op["op"] == "statecheck":
        result = statecheck(op["samples"])
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


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


class Rows:
    """Every sample of every row, per side; reported as median with min-max (never best-of)."""

    def __init__(self) -> None:
        self.samples: dict[str, dict[str, list[float]]] = {}

    def add(self, metric: str, side: str, values: float | list[float]) -> None:
        found = self.samples.setdefault(metric, {}).setdefault(side, [])
        found.extend(values if isinstance(values, list) else [values])

    def summary(self) -> list[dict[str, Any]]:
        out = []
        for metric, sides in self.samples.items():
            row: dict[str, Any] = {"metric": metric}
            for side, values in sides.items():
                row[side] = {
                    "median": _median(values),
                    "min": min(values),
                    "max": max(values),
                    "n": len(values),
                }
            peers = _peers(row)
            out.append({**row, "peer": peers[0] if peers else None, "ratio": _ratio(metric, row)})
        return out


_RESERVED = {"metric", "refusalkit", "ratio", "peer"}


def _peers(row: dict[str, Any]) -> list[str]:
    """The row's peer sides (pymerkle, or the reads it is set beside), first the main one."""
    return [k for k in row if k not in _RESERVED]


def _ratio_of(row: dict[str, Any], side: str) -> float | None:
    """How many times faster refusalkit is than ``side``, on the medians."""
    mine, peer = row.get("refusalkit"), row.get(side)
    if not mine or not peer or not mine["median"] or not peer["median"]:
        return None
    m, p = mine["median"], peer["median"]
    return float(m / p if "/s" in row["metric"] else p / m)  # a rate, else a time


def _ratio(metric: str, row: dict[str, Any]) -> float | None:
    """The ratio to the main peer (``None`` without one)."""
    peers = _peers({**row, "metric": metric})
    return _ratio_of({**row, "metric": metric}, peers[0]) if peers else None


def _our_proofs(journal: Any, size: int, samples: int) -> tuple[float, float]:
    """Mean ms of one inclusion and one consistency proof at ``size`` (one round)."""
    rng = random.Random(size)
    started = time.perf_counter()
    for _ in range(samples):
        journal.inclusion_proof(rng.randrange(size), size)
    inclusion = (time.perf_counter() - started) / samples * 1e3
    started = time.perf_counter()
    for _ in range(samples):
        journal.consistency_proof(rng.randrange(1, size), size)
    return inclusion, (time.perf_counter() - started) / samples * 1e3


def _checkpoints(journal: Any, samples: int) -> tuple[list[float], list[float]]:
    """ms of the signer-state check alone (load the signer's last checkpoint, read the head,
    build and verify the RFC 9162 consistency proof from the last signed size: what the signing
    rule is given and decides) and of a whole ``checkpoint()`` (the check, signing, the durable
    state write, the store's commit), one entry appended before each."""
    checks, totals = [], []
    for _ in range(samples):
        journal.append([decision(10_000_000 + random.randrange(10**9))])
        started = time.perf_counter()
        proof, _ = journal._signing_proof(adopt=False, new_origin=False)  # timed
        check_signing(proof)
        checks.append((time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        journal.checkpoint()
        totals.append((time.perf_counter() - started) * 1e3)
    return checks, totals


def _durable_writes(workdir: Path, samples: int) -> list[float]:
    """Median ms of one durable state write (a slot written in place, one fsync): the floor
    under a checkpoint's state write and a witness's answer on this disk."""
    slots, times = SlotFile(workdir / "floor.json"), []
    slots.write("x" * 400)
    slots.write("x" * 400)  # both slots exist: every timed write is one fsync
    for _ in range(samples):
        started = time.perf_counter()
        slots.write("x" * 400)
        times.append((time.perf_counter() - started) * 1e3)
    return times


def _witness_round_trips(workdir: Path, keyring: Keyring, samples: int) -> list[float]:
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
        return times
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _tiles_vs_export(journal: Any, workdir: Path, size: int, rows: Rows, rounds: int) -> None:
    """Entries/s of a first ``journal tiles`` export beside ``journal export`` of the same log,
    interleaved in each round."""
    tiles = f"tiles export entries/s, {size:,}"
    for r in range(rounds):
        out = workdir / f"tiles-{size}-{r}"
        started = time.perf_counter()
        export_tiles(journal, out)
        rows.add(tiles, "refusalkit", size / (time.perf_counter() - started))
        shutil.rmtree(out)
        target = workdir / f"bundle-{size}-{r}.json"
        started = time.perf_counter()
        export_bundle(journal, target)
        rows.add(tiles, "journal export", size / (time.perf_counter() - started))
        target.unlink()


PACK = "policy: bench\nversion: v1\ndefault: deny\nrules: []\n"


class _Service:
    """A real ``refusalkit serve`` (uvicorn) on 127.0.0.1 over ``store``, with a read key."""

    def __init__(self, workdir: Path, store: str) -> None:
        (workdir / "pack.yaml").write_text(PACK)
        _, self.key = KeyStore(workdir / "keys.json").add("bench", {Scope.READ})
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        args = ["serve", "--policy", str(workdir / "pack.yaml"), "--journal", store]
        args += ["--keys-file", str(workdir / "keys.json"), "--keyring"]
        args += [str(workdir / "keyring.json"), "--port", str(self.port), "--workers", "1"]
        self.log = (workdir / "serve.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from refusalkit.cli import main; main()", *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"the service did not start (see {workdir / 'serve.log'})")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1e3


def _get(http: httpx.Client, url: str, params: dict[str, int] | None = None) -> None:
    answer = http.get(url, params=params)
    assert answer.status_code == 200, answer.text


_BUNDLE = "tile entry bundle GET ms (256 entries)"


def _reads(http: httpx.Client, base: str, journal: Any, n: int) -> dict[tuple[str, str], float]:
    """One timed call of each read of tile ``n``, in turn."""
    start, end = n * TILE_WIDTH, (n + 1) * TILE_WIDTH
    calls: dict[tuple[str, str], Callable[[], Any]] = {
        (_BUNDLE, "refusalkit"): partial(_get, http, f"{base}/tlog/{tile_path('entries', n)}"),
        (_BUNDLE, "GET /v1/journal/entries"): partial(
            _get, http, f"{base}/entries", {"start": start, "end": end}
        ),
        (_BUNDLE, "Journal.entries, in process"): partial(journal.entries, start, end),
        ("tile hash GET ms (level 0)", "refusalkit"): partial(
            _get, http, f"{base}/tlog/{tile_path(0, n)}"
        ),
        ("tlog checkpoint GET ms", "refusalkit"): partial(_get, http, f"{base}/tlog/checkpoint"),
    }
    return {key: _timed(call) for key, call in calls.items()}


def _service_latency(
    workdir: Path, store: str, keyring: Keyring, size: int, rows: Rows, samples: int
) -> None:
    """ms per GET of the tlog checkpoint, a full hash tile and a full entry bundle, beside the
    same 256 entries through ``GET /v1/journal/entries`` and ``Journal.entries`` (what
    ``journal export`` reads with), each tile index random, the calls in turn."""
    service = _Service(workdir, store)
    base, rng = f"{service.url}/v1/journal", random.Random(size)
    auth = {"Authorization": f"Bearer {service.key}"}
    try:
        with httpx.Client(headers=auth) as http, open_journal(store, keyring, create=False) as j:
            for i in range(samples + 5):
                times = _reads(http, base, j, rng.randrange(size // TILE_WIDTH))
                if i >= 5:  # the first calls open the connection and warm the caches
                    for (metric, side), value in times.items():
                        rows.add(metric, side, value)
    finally:
        service.stop()


def _appends_rows(
    rows: Rows, peer: Pymerkle, workdir: Path, keyring: Keyring, quick: bool, rounds: int
) -> None:
    n1, n1000 = (200, 20_000) if quick else (500, 50_000)
    for batch, total in ((1, n1), (1000, n1000)):
        key = f"append/s SQLite, batch {batch}"
        for r in range(rounds):
            rows.add(
                key,
                "refusalkit",
                _appends(str(workdir / f"a{batch}-{r}.db"), keyring, batch, total),
            )
            rows.add(key, "pymerkle", float(peer.ask(op="appends", batch=batch, total=total)))
    memory = float(peer.ask(op="appends", batch=1, total=n1000, memory=True))
    rows.add("append/s in memory (pymerkle only, not durable)", "pymerkle", memory)
    url = _pg_database()
    if url:
        try:
            for batch, total in ((1, n1), (1000, n1000)):
                for _ in range(rounds):
                    rows.add(
                        f"append/s PostgreSQL, batch {batch}",
                        "refusalkit",
                        _appends(url, keyring, batch, total),
                    )
        finally:
            _drop(url)


def _size_rows(rows: Rows, peer: Pymerkle, journal: Any, size: int, rounds: int) -> None:
    """Proofs and the signer-state check at ``size``, the two sides in turn in each round."""
    samples = 30 if size > 100_000 else 100
    for _ in range(rounds):
        inc, con = _our_proofs(journal, size, samples)
        rows.add(f"inclusion proof ms, {size:,}", "refusalkit", inc)
        rows.add(f"consistency proof ms, {size:,}", "refusalkit", con)
        p_inc, p_con = peer.ask(op="proofs", size=size, samples=samples)
        rows.add(f"inclusion proof ms, {size:,}", "pymerkle", float(p_inc))
        rows.add(f"consistency proof ms, {size:,}", "pymerkle", float(p_con))
        checks, whole = _checkpoints(journal, 10)
        rows.add(f"signer-state check ms, {size:,}", "refusalkit", checks)
        rows.add(
            f"signer-state check ms, {size:,}", "pymerkle", peer.ask(op="statecheck", samples=10)
        )
        rows.add(f"checkpoint with the check, durable, ms, {size:,}", "refusalkit", whole)


def run(quick: bool, max_size: int, rounds: int, workdir: Path) -> Rows:
    keyring, peer, rows = Keyring.generate(), Pymerkle(), Rows()
    keyring.save(workdir / "keyring.json")
    limit = min(max_size, 100_000) if quick else max_size
    sizes = [*(s for s in (10_000, 100_000, 1_000_000) if s < limit), limit]
    store = str(workdir / "proofs.db")
    try:
        _appends_rows(rows, peer, workdir, keyring, quick, rounds)
        chunk = [decision(i) for i in range(10_000)]
        state = signer_state_dir(workdir / "keyring.json")
        with open_journal(store, keyring, signer_state=state) as journal:
            for size in sizes:
                while journal.size() < size:
                    journal.append(chunk[: size - journal.size()])
                journal.checkpoint()
                _size_rows(rows, peer, journal, size, rounds)
            journal.checkpoint()
            top = journal.size()
            _tiles_vs_export(journal, workdir, top, rows, rounds)
            for _ in range(rounds):
                rows.add(f"full verify s, {top:,}", "refusalkit", journal.verify().seconds)
        _service_latency(workdir, store, keyring, top, rows, 20 * rounds)
        rows.add(
            "witness cosignature round trip ms (loopback)",
            "refusalkit",
            _witness_round_trips(workdir, keyring, 50),
        )
        rows.add(
            "one fsync'd state write ms (the disk's floor)",
            "refusalkit",
            _durable_writes(workdir, 30),
        )
    finally:
        peer.close()
    return rows


def _fmt(cell: dict[str, float] | None) -> str:
    if cell is None:
        return "-"

    def num(value: float) -> str:
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"

    return f"{num(cell['median'])} [{num(cell['min'])}-{num(cell['max'])}]"


def report(rows: Rows, meta: dict[str, Any]) -> None:
    title = (
        f"refusalkit journal vs peers, {meta['date']}, median \\[min-max], rounds interleaved;"
        f" load average {meta['loadavg_start'][0]:.2f} -> {meta['loadavg_end'][0]:.2f}"
    )
    table = Table(title=title)
    for column in ("metric", "refusalkit", "peer", "peer's figure", "ratio (x faster)"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    summary = rows.summary()
    for row in summary:
        mine = _fmt(row.get("refusalkit"))
        peers = _peers(row)
        if not peers:
            table.add_row(row["metric"], mine, "-", "-", "")
        for n, side in enumerate(peers):
            ratio = _ratio_of(row, side)
            table.add_row(
                row["metric"] if n == 0 else "",
                mine if n == 0 else "",
                side,
                _fmt(row[side]),
                "" if ratio is None else f"{ratio:.2f}" if ratio < 1 else f"{ratio:.1f}",
            )
    console.print(table)
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    payload = {**meta, "canonical_encoder": ENCODERS[0].name, "rows": summary}
    (results / "journal.json").write_text(json.dumps(payload, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description="journal benchmark vs pymerkle")
    parser.add_argument("--quick", action="store_true", help="stop the sizes at 100k entries")
    parser.add_argument(
        "--max-size", type=int, default=1_000_000, help="the largest log size (default 1M)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds, sides interleaved")
    args = parser.parse_args()
    load = os.getloadavg()
    console.print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        rows = run(args.quick, args.max_size, args.rounds, Path(tmp))
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(started)),
        "quick": args.quick,
        "max_size": args.max_size,
        "rounds": args.rounds,
        "seconds": round(time.time() - started, 1),
        "loadavg_start": list(load),
        "loadavg_end": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }
    report(rows, meta)


if __name__ == "__main__":
    main()
