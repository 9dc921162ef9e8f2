"""In-process journaling: ``refusalkit.enforcer`` decisions per second, journal off against on.

1 and 8 concurrent callers (threads) each decide distinct requests (a fresh ``args.path`` per
call) through one enforcer; the peer of "journal on" is the same enforcer with no journal, the
two taken in turn inside each round. With a journal, concurrent callers' decisions go to the
store in groups and each caller gets its decision back only once it is durable. For one caller,
every decision waits for one durable commit: its cost per decision is shown beside the fsync
time of the journal's disk (``os.fsync`` of a 4 KiB write in the same directory, the same
rounds). Reports medians over rounds with min-max spreads and the load average; figures, never
pass/fail.

The store's floor, in the same rounds and directory: bare ``sqlite3`` group commits of as many
rows as there are callers (``BEGIN IMMEDIATE``, the store's INSERT, ``COMMIT``), with the SQLite
store's pragmas and table (``journal/_store_sqlite.py``) and rows copied from the journal's own
entries (real decisions, 734 bytes each); no head, tree, hashing or wake-ups. Beside it the
ceiling it implies, the highest journal on/off any journal on that store could reach:
``off_time / (off_time + floor)``, a decision's time without a journal and the floor's time a
decision. Measured 2 December 2026, 21:15 UTC, load 0.6-0.8 (``--quick``): on tmpfs a commit of
8 costs 8.1 us a decision (ceiling 0.60, measured 0.08), of 1 costs 22.8 us (ceiling 0.32,
measured 0.09); on the local disk 23.0 us (ceiling 0.42, measured 0.08) and 100.6 us (ceiling
0.13, measured 0.06).

    python bench/enforcer.py            # 5 rounds of ~1 s per mode
    python bench/enforcer.py --quick    # 3 short rounds
    python bench/enforcer.py --dir /dev/shm   # the journal on tmpfs: the software's own cost,
                                              # without the disk's fsync
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import refusalkit
from refusalkit.enforce import LocalEnforcer
from refusalkit.journal import _store_sqlite as sqlite_store
from refusalkit.keyring import Keyring

PACK = """\
policy: bench-enforcer
version: v1
default: deny
rules:
  - id: reads_ok
    effect: allow
    when: {tool: read_file}
"""
RESULTS = Path(__file__).parent / "results" / "enforcer.json"


def _rate(enforcer: LocalEnforcer, callers: int, seconds: float) -> float:
    """Decisions per second over ``seconds``, ``callers`` threads deciding distinct requests."""
    counts = [0] * callers
    stop = time.perf_counter() + seconds

    def run(n: int) -> None:
        i = 0
        while time.perf_counter() < stop:
            path = f"/workspace/{n}/{i}.txt"
            enforcer.decide({"tool": "read_file", "args": {"path": path}, "caller": {"agent": "b"}})
            i += 1
        counts[n] = i

    threads = [threading.Thread(target=run, args=(n,)) for n in range(callers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def _fsync_s(root: Path, seconds: float) -> float:
    """Median seconds of one 4 KiB write + ``os.fsync`` in ``root``."""
    times: list[float] = []
    fd = os.open(root / "fsync.probe", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop or len(times) < 5:
            t0 = time.perf_counter()
            os.pwrite(fd, os.urandom(4096), 0)
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return statistics.median(times)


def _real_rows(journal: Path, n: int) -> list[tuple[Any, ...]]:
    """The first ``n`` entry rows of ``journal`` as stored, without their index: real decisions
    encoded by the journal (bytes, leaf hash, index columns, node hashes), blobs as
    ``bytearray`` as the store binds them."""
    db = sqlite3.connect(journal)
    try:
        sql = f"SELECT * FROM journal_entry ORDER BY idx LIMIT {n}"  # n: an int
        rows = db.execute(sql).fetchall()
    finally:
        db.close()
    return [tuple(bytearray(v) if isinstance(v, bytes) else v for v in r[1:]) for r in rows]


def _store_floor(
    db: sqlite3.Connection, rows: list[tuple[Any, ...]], group: int, seconds: float
) -> float:
    """Seconds a decision of bare ``sqlite3`` group commits of ``group`` rows: ``BEGIN
    IMMEDIATE``, one INSERT of the rows (the store's statement), ``COMMIT``; no head, tree or
    hashing. The WAL is checkpointed as the store's ``maintain`` does, outside the timing."""
    sql = sqlite_store._insert_rows(group)  # (the store's own statement)
    start = db.execute("SELECT coalesce(max(idx) + 1, 0) FROM journal_entry").fetchone()[0]
    spent, done, backlog = 0.0, 0, 0
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop or done < 5 * group:
        params = [
            v for i in range(group) for v in (start + done + i, *rows[(done + i) % len(rows)])
        ]
        t0 = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.execute(sql, params)
        db.execute("COMMIT")
        spent += time.perf_counter() - t0
        done += group
        backlog += group * len(rows[0][0])
        if backlog >= sqlite_store.WAL_CHECKPOINT_BYTES:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            backlog = 0
    return spent / done


def _floor_db(root: Path) -> sqlite3.Connection:
    """An empty journal file with the SQLite store's pragmas and schema, bare ``sqlite3``."""
    db = sqlite3.connect(root / "floor.db", isolation_level=None)
    for pragma in sqlite_store._PRAGMAS:  # (the same pragmas as the store)
        db.execute(pragma)
    db.executescript(sqlite_store._SCHEMA)  # (the same table)
    return db


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bench(root: Path, rounds: int, seconds: float) -> dict[str, Any]:
    pack = root / "pack.yaml"
    pack.write_text(PACK, encoding="utf-8")
    ring = Keyring.generate()
    bare = refusalkit.enforcer(policy=pack, keyring=ring)
    journaled = refusalkit.enforcer(policy=pack, journal=root / "enforcer.db", keyring=ring)
    rows: dict[int, dict[str, list[float]]] = {
        c: {"off": [], "on": [], "ratio": [], "floor_us": [], "ceiling": []} for c in (1, 8)
    }
    fsync: list[float] = []
    floor_db = _floor_db(root)
    with journaled:
        _rate(journaled, 8, seconds / 10)  # real decisions in the journal, for the floor's rows
        entries = _real_rows(root / "enforcer.db", 8)
        for _ in range(rounds):
            for callers, row in rows.items():
                off = _rate(bare, callers, seconds)
                on = _rate(journaled, callers, seconds)
                floor = _store_floor(floor_db, entries, callers, seconds)
                row["off"].append(off)
                row["on"].append(on)
                row["ratio"].append(on / off)
                row["floor_us"].append(floor * 1e6)
                row["ceiling"].append((1 / off) / (1 / off + floor))
            fsync.append(_fsync_s(root, seconds / 4))
    floor_db.close()
    out: dict[str, Any] = {
        "callers": {str(c): {k: _summary(v) for k, v in row.items()} for c, row in rows.items()},
        "rounds": {str(c): row for c, row in rows.items()},
        "fsync_ms": _summary([f * 1000 for f in fsync]),
        "entry_bytes": len(entries[0][0]),
    }
    one_on = statistics.median(rows[1]["on"])
    one_off = statistics.median(rows[1]["off"])
    out["one_caller_commit_ms"] = (1 / one_on - 1 / one_off) * 1000
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 short rounds")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path.cwd(),
        help="where the journal lives (default: here); tmpfs shows the cost without the disk",
    )
    args = parser.parse_args()
    rounds, seconds = (3, 0.5) if args.quick else (5, 1.0)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        figures = bench(Path(tmp), rounds, seconds)
    figures |= {
        "journal_dir": str(args.dir),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    for callers, row in figures["callers"].items():
        on, off, ratio = row["on"], row["off"], row["ratio"]
        print(
            f"{callers} caller(s): journal off {off['median']:,.0f}/s, on {on['median']:,.0f}/s,"
            f" on/off {ratio['median']:.2f} (range {ratio['min']:.2f}-{ratio['max']:.2f})"
        )
        floor, ceiling = row["floor_us"], row["ceiling"]
        print(
            f"  store floor (bare sqlite3, commits of {callers}):"
            f" {floor['median']:.1f} us a decision (range {floor['min']:.1f}-{floor['max']:.1f});"
            f" ceiling on/off {ceiling['median']:.2f}"
            f" (range {ceiling['min']:.2f}-{ceiling['max']:.2f})"
        )
    print(
        f"one caller: {figures['one_caller_commit_ms']:.3f} ms per decision for its commit;"
        f" disk fsync {figures['fsync_ms']['median']:.3f} ms"
        f" (range {figures['fsync_ms']['min']:.3f}-{figures['fsync_ms']['max']:.3f})"
    )
    print(f"load average {load_before[0]:.1f} -> {figures['load_after'][0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
