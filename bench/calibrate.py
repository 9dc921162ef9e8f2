"""Calibration runner and judge throughput.

1. Runner: the 450 XSTest prompts through ``OpenAIRunner`` at concurrency 32 against the loopback
   OpenAI-compatible server (tests/support/openai_server.py) running in its own process with a
   configured latency. Reported: wall time, prompts/s, overhead per prompt beyond the server's
   own latency ((wall - ceil(450/32) x latency) / 450) and the runner process's CPU per prompt
   (the work the runner adds: HTTP, retries bookkeeping, the on-disk cache, judging).
   Peer: a bare httpx loop (one AsyncClient, a semaphore of 32, no cache, no judge): what any
   script would do. Target: overhead <= 2 ms per prompt.
2. Judges: responses judged per CPU-second over XSTest's 900 labelled responses, per judge, with
   XSTest's string-match baseline as the peer. Target: keyword >= 50,000 responses/s.

    python bench/calibrate.py [--quick]     # table + bench/results/calibrate.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from judges import speed  # noqa: E402
from refusalkit.provenance import (  # noqa: E402
    CalibrationSet,
    KeywordJudge,
    OpenAIRunner,
    import_xstest,
    run_calibration,
)
from refusalkit.provenance._families import load_families  # noqa: E402
from support.openai_server import OpenAIServer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "calibrate.json"
CONCURRENCY = 32


def _reply(body: dict[str, Any]) -> str:
    return "I'm sorry, but I can't help with that." if len(str(body)) % 3 == 0 else "Sure: step 1."


def _serve(queue: Any, latency: float) -> None:
    with OpenAIServer(_reply, latency_s=latency) as server:
        queue.put(server.base_url)
        time.sleep(3600)


def _ours(cset: CalibrationSet, url: str, cache: Path) -> None:
    runner = OpenAIRunner(url, "bench", concurrency=CONCURRENCY)
    run_calibration(cset, runner, KeywordJudge(), cache=cache, fresh=True)


def _peer(cset: CalibrationSet, url: str, _cache: Path) -> None:
    async def go() -> None:
        gate = asyncio.Semaphore(CONCURRENCY)
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:

            async def one(prompt: str) -> str:
                async with gate:
                    body = {"model": "bench", "messages": [{"role": "user", "content": prompt}]}
                    r = await client.post(f"{url}/chat/completions", json=body)
                    r.raise_for_status()
                    return str(r.json()["choices"][0]["message"]["content"])

            await asyncio.gather(*(one(p.prompt) for p in cset))

    asyncio.run(go())


def _time(fn: Callable[[], None], repeats: int) -> tuple[float, float]:
    """Median wall seconds and CPU seconds of ``repeats`` runs (after one warm-up)."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def bench_runner(latencies: list[float], repeats: int) -> list[dict[str, Any]]:
    """Runner vs peer at each server latency."""
    cset = import_xstest(ROOT / "tests" / "vectors" / "xstest" / "xstest_prompts.csv")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache.sqlite3"
        for latency in latencies:
            queue: Any = mp.Queue()
            server = mp.Process(target=_serve, args=(queue, latency), daemon=True)
            server.start()
            url = queue.get(timeout=30)
            try:
                for name, fn in (
                    ("refusalkit OpenAIRunner", _ours),
                    ("bare httpx loop (peer)", _peer),
                ):
                    wall, cpu = _time(lambda fn=fn, url=url: fn(cset, url, cache), repeats)
                    ideal = math.ceil(len(cset) / CONCURRENCY) * latency
                    results.append(
                        {
                            "runner": name,
                            "server_latency_s": latency,
                            "prompts": len(cset),
                            "concurrency": CONCURRENCY,
                            "wall_s": wall,
                            "prompts_per_s": len(cset) / wall,
                            "overhead_ms_per_prompt": max(0.0, wall - ideal) / len(cset) * 1000,
                            "cpu_ms_per_prompt": cpu / len(cset) * 1000,
                        }
                    )
            finally:
                server.kill()
    return results


def bench_judges(seconds: float) -> list[dict[str, Any]]:
    """Responses per CPU-second per judge (``bench/judges.py``'s measurement, peer first)."""
    families = load_families()
    rows = [r for name in ("gpt-4", "llama-2") for r in families[name]]
    rates = speed(rows, seconds)
    return [
        {"judge": name, "responses_per_s": rate}
        for name, rate in rates.items()
        if not name.endswith(" spread")
    ]


def _print(runner: list[dict[str, Any]], judges: list[dict[str, Any]]) -> None:
    console = Console(width=130)
    table = Table(title=f"Calibration runner: 450 XSTest prompts, concurrency {CONCURRENCY}")
    for column in (
        "runner",
        "server latency",
        "wall",
        "prompts/s",
        "overhead/prompt",
        "CPU/prompt",
        "vs peer",
    ):
        table.add_column(column, no_wrap=True, justify="left" if column == "runner" else "right")
    for row in runner:
        peer = next(
            r
            for r in runner
            if r["runner"].endswith("(peer)") and r["server_latency_s"] == row["server_latency_s"]
        )
        table.add_row(
            row["runner"], f"{row['server_latency_s'] * 1000:.0f} ms", f"{row['wall_s']:.3f} s",
            f"{row['prompts_per_s']:.0f}", f"{row['overhead_ms_per_prompt']:.2f} ms",
            f"{row['cpu_ms_per_prompt']:.2f} ms", f"{peer['wall_s'] / row['wall_s']:.2f}x speed",
        )  # fmt: skip
    console.print(table)
    table = Table(title="Judge throughput (900 labelled XSTest responses, per CPU-second)")
    for column in ("judge", "responses/s", "vs peer"):
        table.add_column(column, justify="left" if column == "judge" else "right")
    peer_rate = judges[0]["responses_per_s"]
    for row in judges:
        rate = row["responses_per_s"]
        table.add_row(row["judge"], f"{rate:,.0f}", f"{rate / peer_rate:.2f}x")
    console.print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description="Calibration runner and judge throughput.")
    parser.add_argument("--quick", action="store_true", help="One latency, fewer repeats.")
    args = parser.parse_args()
    latencies = [0.02] if args.quick else [0.0, 0.02, 0.1]
    runner = bench_runner(latencies, repeats=1 if args.quick else 3)
    judges = bench_judges(0.5 if args.quick else 2.0)
    _print(runner, judges)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "calibrate",
        "cpus": mp.cpu_count(),
        "targets": {"overhead_ms_per_prompt": 2.0, "keyword_responses_per_s": 50_000},
        "runner": runner,
        "judges": judges,
    }
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
