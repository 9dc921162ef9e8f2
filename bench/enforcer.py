"""In-process journaling: ``refusalkit.enforcer`` decisions per second, journal off against on.

1 and 8 concurrent callers (threads) each decide distinct requests (a fresh ``args.path`` per
call) through one enforcer; the peer of "journal on" is the same enforcer with no journal, the
two taken in turn inside each round. With a journal, concurrent callers' decisions go to the
store in groups and each caller gets its decision back only once it is durable. For one caller,
every decision waits for one durable commit: its cost per decision is shown beside the fsync
time of the journal's disk (``os.fsync`` of a 4 KiB write in the same directory, the same
rounds). Reports medians over rounds with min-max spreads and the load average; figures, never
pass/fail.

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
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import refusalkit
from refusalkit.enforce import LocalEnforcer
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


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def bench(root: Path, rounds: int, seconds: float) -> dict[str, Any]:
    pack = root / "pack.yaml"
    pack.write_text(PACK, encoding="utf-8")
    ring = Keyring.generate()
    bare = refusalkit.enforcer(policy=pack, keyring=ring)
    journaled = refusalkit.enforcer(policy=pack, journal=root / "enforcer.db", keyring=ring)
    rows: dict[int, dict[str, list[float]]] = {
        c: {"off": [], "on": [], "ratio": []} for c in (1, 8)
    }
    fsync: list[float] = []
    with journaled:
        for _ in range(rounds):
            for callers, row in rows.items():
                off = _rate(bare, callers, seconds)
                on = _rate(journaled, callers, seconds)
                row["off"].append(off)
                row["on"].append(on)
                row["ratio"].append(on / off)
            fsync.append(_fsync_s(root, seconds / 4))
    out: dict[str, Any] = {
        "callers": {str(c): {k: _summary(v) for k, v in row.items()} for c, row in rows.items()},
        "rounds": {str(c): row for c, row in rows.items()},
        "fsync_ms": _summary([f * 1000 for f in fsync]),
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
    print(
        f"one caller: {figures['one_caller_commit_ms']:.3f} ms per decision for its commit;"
        f" disk fsync {figures['fsync_ms']['median']:.3f} ms"
        f" (range {figures['fsync_ms']['min']:.3f}-{figures['fsync_ms']['max']:.3f})"
    )
    print(f"load average {load_before[0]:.1f} -> {figures['load_after'][0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
