"""Load benchmark of the HTTP service: ``POST /v1/decide`` and ``/v1/decide/batch`` (100 a batch).

A real ``refusalkit serve`` (uvicorn) on 127.0.0.1 journals on SQLite, then on PostgreSQL; a second
process drives it over keep-alive HTTP/1.1 connections for a bounded time and reports decisions/s,
p50/p99 latency per HTTP call, and the count acknowledged; the journal's size must equal it.
The issue's targets on a 2-core machine: >= 3,000 single decisions/s, >= 30,000 decisions/s in
batches of 100, p99 <= 20 ms. No peer service runs here (OPA is not installed), so each figure is
shown beside its target, as a ratio.

Each mode runs at several connection counts, each connection with one call in flight: more
connections queue more work in the server, so p99 grows with them while the rate levels off. The
verdict per store and mode is the best rate whose p99 is within 20 ms (a latency-bounded
throughput, the usual way to state a service's capacity); the table shows every run.

    python bench/service.py            # full run (about 5 minutes)
    python bench/service.py --quick    # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from rich.console import Console
from rich.table import Table

from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.server import KeyStore, Scope

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

RESULTS = Path(__file__).resolve().parent / "results" / "service.json"
PG_ADMIN = os.environ.get("REFUSALKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
TARGETS = {"single": 3000.0, "batch": 30000.0, "p99_ms": 20.0}
PACK = """\
policy: bench
version: v1
default: deny
field_classes:
  credential-file: {sensitive: true}
capabilities:
  coder: ["fs.*", "shell.run"]
input_filters:
  - id: prompt_injection_markers
    field: input
    regex: ["(?i)ignore (all )?previous instructions"]
rules:
  - id: approved_workspace
    effect: allow
    when: {tool: fs.write, args.path: {glob: "/workspace/src/**"}}
  - id: sensitive_path
    effect: deny
    message: "Writes to credential files are not allowed."
    when:
      tool: {glob: "fs.*"}
      args.path: {glob: ["**/.env", "**/id_rsa*", "/etc/**"], class: credential-file}
"""


def _requests(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        path = f"/workspace/src/m{i}.py" if i % 3 else f"/workspace/p{i}/.env"
        out.append(
            {
                "tool": "fs.write",
                "args": {"path": path, "content": "x" * 64},
                "caller": {"agent": "coder", "session": f"s-{i % 7}"},
                "input": "please save my file",
            }
        )
    return out


# --------------------------------------------------------------------------- load client


async def _connection(
    host: str, port: int, request: bytes, stop_at: float, latencies: list[float], per_call: int
) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    acknowledged = 0
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise RuntimeError(f"HTTP {status}")
            acknowledged += per_call
    finally:
        writer.close()
    return acknowledged


def _http_request(port: int, path: str, key: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _drive(args: argparse.Namespace) -> dict[str, Any]:
    if args.batch:
        body = json.dumps({"requests": _requests(args.batch)}).encode()
        request = _http_request(args.port, "/v1/decide/batch", args.key, body)
        per_call = args.batch
    else:
        body = json.dumps(_requests(1)[0]).encode()
        request = _http_request(args.port, "/v1/decide", args.key, body)
        per_call = 1
    latencies: list[float] = []
    started = time.perf_counter()
    stop_at = started + args.duration
    counts = await asyncio.gather(
        *[
            _connection("127.0.0.1", args.port, request, stop_at, latencies, per_call)
            for _ in range(args.connections)
        ]
    )
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "acknowledged": sum(counts),
        "elapsed_s": elapsed,
        "calls": len(latencies),
        "decisions_per_s": sum(counts) / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


def client_main(args: argparse.Namespace) -> None:
    if uvloop is not None:
        uvloop.install()
    print(json.dumps(asyncio.run(_drive(args))))


# --------------------------------------------------------------------------- orchestration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from refusalkit.cli import main; main()", *args]


def _setup(root: Path) -> tuple[Path, Path, str]:

    pack = root / "pack.yaml"
    pack.write_text(PACK)
    ring = Keyring.generate().save(root / "keyring.json")
    _, key = KeyStore(root / "keys.json").add("bench", {Scope.DECIDE, Scope.READ})
    return pack, ring, key


class _Server:
    def __init__(self, root: Path, journal: str, workers: int) -> None:
        self.port = _free_port()
        self.log = (root / f"server-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(
            _cli(
                "serve",
                "--policy",
                str(root / "pack.yaml"),
                "--journal",
                journal,
                "--keys-file",
                str(root / "keys.json"),
                "--keyring",
                str(root / "keyring.json"),
                "--workers",
                str(workers),
                "--port",
                str(self.port),
            ),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()


def _load(port: int, key: str, *, batch: int, connections: int, duration: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--client",
        "--port",
        str(port),
        "--key",
        key,
        "--batch",
        str(batch),
        "--connections",
        str(connections),
        "--duration",
        str(duration),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=duration + 120)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _journal_size(store: str, root: Path) -> int:

    with open_journal(store, Keyring.load(root / "keyring.json")) as journal:
        journal.verify()
        return journal.size()


def _postgres_store() -> tuple[str | None, str]:
    try:
        name = f"rk_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}", name
    except Exception as exc:
        return None, str(exc).splitlines()[0]


def _drop_postgres(name: str) -> None:

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _scenario(
    root: Path,
    store: str,
    key: str,
    workers: int,
    duration: float,
    connections: tuple[list[int], list[int]],
) -> list[dict[str, Any]]:
    single_connections, batch_connections = connections
    server = _Server(root, store, workers)
    rows = []
    plan = [("single", 0, c) for c in single_connections]
    plan += [("batch", 100, c) for c in batch_connections]
    try:
        _load(server.port, key, batch=0, connections=4, duration=1.0)  # warm up
        for mode, batch, conns in plan:
            before = _journal_size(store, root)
            result = _load(server.port, key, batch=batch, connections=conns, duration=duration)
            journaled = _journal_size(store, root) - before
            result.update(
                mode=mode,
                workers=workers,
                connections=conns,
                journaled=journaled,
                counts_match=journaled == result["acknowledged"],
            )
            result["meets_target"] = _meets(result)
            rows.append(result)
    finally:
        server.stop()
    return rows


def _meets(row: dict[str, Any]) -> bool:
    return bool(
        row["decisions_per_s"] >= TARGETS[row["mode"]]
        and row["p99_ms"] <= TARGETS["p99_ms"]
        and row["counts_match"]
    )


def _verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per store and mode: the highest rate whose p99 is within the target, and whether it meets
    the target (a latency-bounded throughput, the usual way to state a service's capacity)."""
    out = []
    for store in dict.fromkeys(r["store"] for r in rows):
        for mode in ("single", "batch"):
            mine = [r for r in rows if r["store"] == store and r["mode"] == mode]
            within = [r for r in mine if r["p99_ms"] <= TARGETS["p99_ms"] and r["counts_match"]]
            best = max(within, key=lambda r: r["decisions_per_s"], default=None)
            out.append(
                {
                    "store": store,
                    "mode": mode,
                    "best_within_p99": None if best is None else round(best["decisions_per_s"]),
                    "at": None if best is None else f"{best['workers']}w/{best['connections']}c",
                    "target": TARGETS[mode],
                    "met": best is not None and _meets(best),
                }
            )
    return out


def _table(rows: list[dict[str, Any]]) -> None:

    table = Table(title="refusalkit service, loopback load (2 cores)")
    for col in (
        "store",
        "mode",
        "workers",
        "conns",
        "decisions/s",
        "target",
        "ratio",
        "p50 ms",
        "p99 ms",
        "acknowledged",
        "journaled",
        "match",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        target = TARGETS[r["mode"]]
        table.add_row(
            r["store"],
            r["mode"],
            str(r["workers"]),
            str(r["connections"]),
            f"{r['decisions_per_s']:,.0f}",
            f"{target:,.0f}",
            f"{r['decisions_per_s'] / target:.2f}",
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            str(r["acknowledged"]),
            str(r["journaled"]),
            "yes" if r["counts_match"] else "NO",
        )
    console = Console(width=160)
    console.print(table)
    for v in _verdicts(rows):
        verdict = "met" if v["met"] else "NOT met"
        best = "none" if v["best_within_p99"] is None else f"{v['best_within_p99']:,}/s"
        console.print(
            f"{v['store']:>8} {v['mode']:>6}: best rate with p99 <= {TARGETS['p99_ms']:g} ms: "
            f"{best} (at {v['at']}); target {v['target']:,.0f}/s: {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--workers", type=int, nargs="*", default=None)
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=32, help=argparse.SUPPRESS)
    parser.add_argument("--duration", type=float, default=10.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(args)
        return
    duration = 3.0 if args.quick else 8.0
    workers = args.workers or ([1] if args.quick else [1, 2])
    connections = ([32], [2, 4]) if args.quick else ([8, 32], [2, 4, 8])
    load_before = list(os.getloadavg())  # the machine is shared: say how busy it was
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as tmp:
        root = Path(tmp)
        _, _, key = _setup(root)
        for w in workers:
            store = str(root / f"journal-w{w}.db")
            rows += [
                dict(r, store="sqlite")
                for r in _scenario(root, store, key, w, duration, connections)
            ]
            if args.sqlite_only:
                continue
            pg, name = _postgres_store()
            if pg is None:
                print(f"PostgreSQL skipped: {name}")
                continue
            try:
                rows += [
                    dict(r, store="postgres")
                    for r in _scenario(root, pg, key, w, duration, connections)
                ]
            finally:
                _drop_postgres(name)
    _table(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "quick": args.quick,
        "load_average_before_after": [load_before, list(os.getloadavg())],
        "targets": TARGETS,
        "verdicts": _verdicts(rows),
        "runs": rows,
    }
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
