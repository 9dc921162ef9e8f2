"""Load benchmark of the HTTP service: ``POST /v1/decide`` and ``/v1/decide/batch`` (100 a batch).

A real ``refusalkit serve`` (uvicorn) on 127.0.0.1 journals on SQLite, then on PostgreSQL; a second
process drives it over keep-alive HTTP/1.1 connections for a bounded time and reports decisions/s,
p50/p99 latency per HTTP call, and the count acknowledged; the journal's size must equal it.
The targets on a 2-core machine: >= 3,000 single decisions/s, >= 30,000 decisions/s in
batches of 100, p99 <= 20 ms. No peer service runs here (OPA is not installed), so each figure is
shown beside its target, as a ratio.

The null row states the machine's limit: the same uvicorn stack (uvloop, httptools, the same
worker count), driven by the same client, answering a fixed body of the same size without
deciding or journaling anything. Every figure is also shown as a ratio to it, which carries over
between machines where absolute figures do not (another 2-core machine measured 15-17k batched
decisions/s where this one measured 40k).

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


# --------------------------------------------------------------------------- the null server

_null_bodies: dict[str, bytes] = {}


def _fixed_bodies() -> dict[str, bytes]:
    """A real decision's bytes, and a batch answer of 100 of them: the null server's answers."""
    import yaml  # noqa: PLC0415

    from refusalkit.decide import DecisionEncoder, DecisionPoint, Pack  # noqa: PLC0415

    point = DecisionPoint(Pack.from_mapping(yaml.safe_load(PACK)), Keyring.generate())
    one = DecisionEncoder().encode(point.decide(_requests(1)[0]))
    batch = b'{"decisions":[' + b",".join([one] * 100) + b'],"indices":'
    batch += json.dumps(list(range(100))).encode() + b"}"
    return {"/v1/decide": one, "/v1/decide/batch": batch}


async def null_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the request and answers a fixed body: no routing, auth, decision or journal."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if not _null_bodies:
        _null_bodies.update(_fixed_bodies())
    body = _null_bodies.get(scope["path"], b'{"status":"ok"}')
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def null_server_main(args: argparse.Namespace) -> None:
    """uvicorn as ``refusalkit serve`` runs it (uvloop, httptools, no access log)."""
    import uvicorn  # noqa: PLC0415

    uvicorn.run(
        "service:null_app",
        app_dir=str(Path(__file__).resolve().parent),
        host="127.0.0.1",
        port=args.port,
        workers=args.null_workers,
        loop="uvloop" if uvloop is not None else "asyncio",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
    )


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
    def __init__(self, root: Path, journal: str | None, workers: int) -> None:
        self.port = _free_port()
        self.log = (root / f"server-{self.port}.log").open("wb")
        null = [sys.executable, __file__, "--null-server", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [*null, "--null-workers", str(workers)]
            if journal is None
            else _cli(
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
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=duration + 120)
    if done.returncode != 0:
        raise RuntimeError(f"the load client failed:\n{done.stderr[-2000:]}")
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
    store: str | None,
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
            before = 0 if store is None else _journal_size(store, root)
            result = _load(server.port, key, batch=batch, connections=conns, duration=duration)
            journaled = result["acknowledged"] if store is None else _journal_size(store, root)
            journaled -= before
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


def _add_null_ratios(rows: list[dict[str, Any]]) -> None:
    """Each run's rate as a ratio to the null server's at the same mode, workers and connections."""
    null = {
        (r["mode"], r["workers"], r["connections"]): r["decisions_per_s"]
        for r in rows
        if r["store"] == "null"
    }
    for r in rows:
        floor = null.get((r["mode"], r["workers"], r["connections"]))
        r["vs_null"] = None if floor is None else r["decisions_per_s"] / floor


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
    for store in dict.fromkeys(r["store"] for r in rows if r["store"] != "null"):
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
                    "vs_null": None if best is None else best["vs_null"],
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
        "vs null",
        "p50 ms",
        "p99 ms",
        "acknowledged",
        "journaled",
        "match",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        target = TARGETS[r["mode"]]
        null = r["store"] == "null"  # the floor: no target, nothing journaled
        table.add_row(
            r["store"],
            r["mode"],
            str(r["workers"]),
            str(r["connections"]),
            f"{r['decisions_per_s']:,.0f}",
            "-" if null else f"{target:,.0f}",
            "-" if null else f"{r['decisions_per_s'] / target:.2f}",
            "-" if r["vs_null"] is None else f"{r['vs_null']:.2f}",
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            str(r["acknowledged"]),
            "-" if null else str(r["journaled"]),
            "-" if null else ("yes" if r["counts_match"] else "NO"),
        )
    console = Console(width=160)
    console.print(table)
    for v in _verdicts(rows):
        verdict = "met" if v["met"] else "NOT met"
        best = "none" if v["best_within_p99"] is None else f"{v['best_within_p99']:,}/s"
        null = "" if v["vs_null"] is None else f", {v['vs_null']:.2f} of the null server's rate"
        console.print(
            f"{v['store']:>8} {v['mode']:>6}: best rate with p99 <= {TARGETS['p99_ms']:g} ms: "
            f"{best} (at {v['at']}{null}); target {v['target']:,.0f}/s: {verdict}"
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
    parser.add_argument("--null-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--null-workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(args)
        return
    if args.null_server:
        null_server_main(args)
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
            rows += [
                dict(r, store="null") for r in _scenario(root, None, key, w, duration, connections)
            ]
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
    _add_null_ratios(rows)
    _table(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "quick": args.quick,
        "load_average_before_after": [load_before, list(os.getloadavg())],
        "targets": TARGETS,
        "null_server": "the same uvicorn stack answering a fixed body; vs_null = rate / its rate",
        "verdicts": _verdicts(rows),
        "runs": rows,
    }
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
