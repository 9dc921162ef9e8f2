"""Load benchmark of the HTTP service: ``POST /v1/decide`` and ``/v1/decide/batch`` (100 a batch).

Four servers run side by side, each a real uvicorn stack on 127.0.0.1: the **null server** (the
same uvicorn stack, uvloop and httptools, answering a fixed decision body without routing,
authenticating, deciding or journaling), the **floor** (the service's own app, which
authenticates, decides, encodes and counts as ``refusalkit serve`` does, but whose journal keeps
nothing: what is left of a single's cost when journaling costs nothing), ``refusalkit serve``
journaling on SQLite, and on PostgreSQL. Inside each round they are driven in turn, in a rotating
order, by a client process over keep-alive HTTP/1.1 connections (each with one call in flight,
cycling through distinct requests), so a change in the machine's load lands on every store of
that round alike.

Single decisions are shown as a ratio to the null server in the same round: what the service keeps
of what this machine's HTTP stack can do, the figure that carries over between machines. Batches
have no such peer (a fixed body answers a batch of 100 without doing any of the work per
decision), so they are shown as decisions per second, SQLite beside PostgreSQL. Every run checks
that the count journaled equals the count acknowledged.

The floor's rate and server CPU beside the null server's and SQLite's split the gap between them:
floor over null is what the decision and the service's HTTP layers cost, SQLite over the floor
what journaling costs (the hand-off to the writer and back, the commit, its wait).

Where the machine has a core to spare, the client runs on core 0 and every server on the others
(``taskset``); otherwise nothing is pinned, and the JSON says so.
Reported: medians over rounds with the min-max range, the load average at each run, and every
round in ``bench/results/service.json``. Figures, never pass/fail.

    python bench/service.py            # 3 rounds, 1 and 2 workers (about 3 minutes)
    python bench/service.py --quick    # 2 short rounds, 1 worker
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refusalkit.journal import Entry, JournalAccess

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None  # type: ignore[assignment]

RESULTS = Path(__file__).resolve().parent / "results" / "service.json"
FLOOR_ENV = "REFUSALKIT_BENCH_FLOOR"  # the floor server's directory (pack, keys, keyring)
PG_ADMIN = os.environ.get("REFUSALKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
TARGETS = {"single_vs_null": 0.5, "batch_per_s": 30000.0, "p99_ms": 20.0}
BATCH = 100
DISTINCT = 64  # distinct request bodies each connection cycles through
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


def _requests(n: int, start: int = 0) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + n):
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
    port: int, requests: list[bytes], stop_at: float, latencies: list[float], per_call: int
) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    acknowledged = 0
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            writer.write(requests[acknowledged // per_call % len(requests)])
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


def _bodies(args: argparse.Namespace, connection: int) -> list[bytes]:
    """Distinct requests for one connection: each path differs, so no two bodies repeat."""
    first = connection * DISTINCT * max(args.batch, 1)
    if args.batch:
        return [
            _http_request(
                args.port,
                "/v1/decide/batch",
                args.key,
                json.dumps({"requests": _requests(args.batch, first + i * args.batch)}).encode(),
            )
            for i in range(DISTINCT)
        ]
    return [
        _http_request(args.port, "/v1/decide", args.key, json.dumps(r).encode())
        for r in _requests(DISTINCT, first)
    ]


async def _drive(args: argparse.Namespace) -> dict[str, Any]:
    per_call = args.batch or 1
    bodies = [_bodies(args, c) for c in range(args.connections)]
    latencies: list[float] = []
    started = time.perf_counter()
    stop_at = started + args.duration
    counts = await asyncio.gather(
        *[_connection(args.port, b, stop_at, latencies, per_call) for b in bodies]
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


# --------------------------------------------------------------------------- the null server

_null_bodies: dict[str, bytes] = {}


def _fixed_bodies() -> dict[str, bytes]:
    """A real decision's bytes, and a batch answer of 100 of them: the null server's answers."""
    import yaml  # noqa: PLC0415

    from refusalkit.decide import DecisionEncoder, DecisionPoint, Pack  # noqa: PLC0415
    from refusalkit.keyring import Keyring  # noqa: PLC0415

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
        workers=args.server_workers,
        loop="uvloop" if uvloop is not None else "asyncio",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
    )


# --------------------------------------------------------------------------- the floor


class _Unjournaled(JournalAccess):
    """The service's journal access, except that an append keeps nothing: it answers at once
    with the next indices. The journal is still opened (the lifespan reads its size, the
    checkpoint schedule runs), so only the append, the hand-off to the writer and the commit
    are left out of the floor's cost."""

    _next = 0

    async def append(self, records: Sequence[Entry]) -> list[int]:
        """The indices the records would have had, with nothing written."""
        first = self._next
        self._next = first + len(records)
        return list(range(first, self._next))


def floor_app() -> Any:
    """The app ``refusalkit serve`` runs (auth, the decide fast path, encoding, metrics), built
    from the bench's files in ``$REFUSALKIT_BENCH_FLOOR``, with its journal's appends left out
    (``_Unjournaled``): the decide path itself is the service's, unchanged."""
    from refusalkit._internal.serving import tune_gc  # noqa: PLC0415
    from refusalkit.server import ServiceConfig, create_app  # noqa: PLC0415

    root = Path(os.environ[FLOOR_ENV])
    config = ServiceConfig(
        policy=root / "pack.yaml",
        journal=str(root / f"floor-{os.getpid()}.db"),
        keys_file=root / "keys.json",
        keyring=root / "keyring.json",
    )
    app = create_app(config)
    app.state.service.journal.__class__ = _Unjournaled  # the same object the routes hold
    tune_gc()
    return app


def floor_server_main(args: argparse.Namespace) -> None:
    """The floor on uvicorn with the options ``refusalkit serve`` uses (``uvicorn_options``);
    its workers, as the service's, count their metrics in one shared directory."""
    import uvicorn  # noqa: PLC0415

    from refusalkit.server._logging import configure_logging  # noqa: PLC0415
    from refusalkit.server._run import uvicorn_options  # noqa: PLC0415

    configure_logging()
    os.environ[FLOOR_ENV] = str(args.floor_root)
    with tempfile.TemporaryDirectory(prefix="rk-bench-metrics-") as metrics_dir:
        if args.server_workers > 1:
            os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
        uvicorn.run(
            "service:floor_app",
            factory=True,
            app_dir=str(Path(__file__).resolve().parent),
            host="127.0.0.1",
            port=args.port,
            workers=args.server_workers,
            **uvicorn_options(access_log=False),  # type: ignore[arg-type]
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from refusalkit.cli import main; main()", *args]


def _setup(root: Path) -> str:
    from refusalkit.keyring import Keyring  # noqa: PLC0415
    from refusalkit.server import KeyStore, Scope  # noqa: PLC0415

    (root / "pack.yaml").write_text(PACK)
    Keyring.generate().save(root / "keyring.json")
    _, key = KeyStore(root / "keys.json").add("bench", {Scope.DECIDE, Scope.READ})
    return key


def _cores(workers: int) -> tuple[set[int] | None, set[int] | None]:
    """(client cores, server cores): the client on core 0 and the servers on the rest, when the
    machine has a core for the client beside one per worker; else (None, None), nothing pinned."""
    if not hasattr(os, "sched_getaffinity") or shutil.which("taskset") is None:
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < workers + 1:
        return None, None
    return {cores[0]}, set(cores[1:])


def _pinned(cores: set[int] | None, cmd: list[str]) -> list[str]:
    """``cmd`` run on ``cores`` (``taskset``; its children inherit the affinity)."""
    if cores is None:
        return cmd
    return ["taskset", "-c", ",".join(map(str, sorted(cores))), *cmd]


def _server_cmd(root: Path, store: str | None, port: int, workers: int) -> list[str]:
    """The command of one server: ``refusalkit serve`` on ``store``, or for the store ``null``
    or ``floor`` this file's null server or floor (neither journals)."""
    if store in (None, "null", "floor"):
        role = "--null-server" if store in (None, "null") else "--floor-server"
        own = [sys.executable, __file__, role, "--port", str(port)]
        return [*own, "--server-workers", str(workers), "--floor-root", str(root)]
    return _cli(
        "serve",
        *("--policy", str(root / "pack.yaml"), "--journal", str(store)),
        *("--keys-file", str(root / "keys.json"), "--keyring", str(root / "keyring.json")),
        *("--workers", str(workers), "--port", str(port)),
    )


class _Server:
    def __init__(
        self,
        root: Path,
        store: str | None,
        workers: int,
        cores: set[int] | None,
        src: Path | None = None,
    ) -> None:
        """Start one server (``store`` as for ``_server_cmd``) and wait for its health check;
        ``self.store`` is the journal it writes, None for the null server and the floor."""
        import httpx  # noqa: PLC0415

        self.store = None if store in (None, "null", "floor") else store
        self.port = _free_port()
        self.log = (root / f"server-{self.port}.log").open("wb")
        env = dict(os.environ)
        if src is not None:  # the code before a change: its source tree ahead of this one
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            _pinned(cores, _server_cmd(root, store, self.port, workers)),
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not start (see {self.log.name})")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()


def _load(
    port: int, key: str, *, batch: int, connections: int, duration: float, cores: set[int] | None
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--client", "--port", str(port), "--key", key]
    cmd += ["--batch", str(batch), "--connections", str(connections), "--duration", str(duration)]
    done = subprocess.run(
        _pinned(cores, cmd),
        capture_output=True,
        text=True,
        check=False,
        timeout=duration + 120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the load client failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _journal_size(store: str, root: Path, *, verify: bool = False) -> int:
    from refusalkit.journal import open_journal  # noqa: PLC0415
    from refusalkit.keyring import Keyring  # noqa: PLC0415

    with open_journal(store, Keyring.load(root / "keyring.json")) as journal:
        if verify:
            journal.verify()
        return journal.size()


def _postgres_store() -> tuple[str | None, str]:
    import psycopg  # noqa: PLC0415

    try:
        name = f"rk_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}", name
    except Exception as exc:
        return None, str(exc).splitlines()[0]


def _drop_postgres(name: str) -> None:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its children (the workers), from
    ``/proc`` (in the kernel's 10 ms ticks); 0.0 where there is no ``/proc``."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if entry.name == str(pid) or fields[1] == str(pid):  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _one_run(
    server: _Server, root: Path, key: str, plan: dict[str, Any], cores: set[int] | None
) -> dict[str, Any]:
    """One load run against one server, its journal counted before and after, and the server's
    CPU time per decision (a figure a busy machine inflates less than the rate)."""
    store = server.store
    load = os.getloadavg()[0]
    before = 0 if store is None else _journal_size(store, root)
    cpu = _cpu_s(server.proc.pid)
    result = _load(server.port, key, cores=cores, **plan)
    cpu = _cpu_s(server.proc.pid) - cpu
    journaled = result["acknowledged"] if store is None else _journal_size(store, root) - before
    result.update(journaled=journaled, counts_match=journaled == result["acknowledged"])
    result["server_cpu_us"] = 1e6 * cpu / max(result["acknowledged"], 1)
    result["load_1m"] = round(load, 2)
    return result


def _rounds(
    root: Path, key: str, servers: dict[str, _Server], opts: argparse.Namespace, workers: int
) -> list[dict[str, Any]]:
    """Every run of every round: per mode and connection count, each store in turn (the order
    rotates from round to round); the null server takes part in single decisions only."""
    client, _ = _cores(workers)
    names = list(servers)
    runs = []
    for r in range(opts.rounds):
        for mode, batch, conns in opts.plan:
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                if mode == "batch" and name == "null":
                    continue
                plan = {"batch": batch, "connections": conns, "duration": opts.duration}
                row = _one_run(servers[name], root, key, plan, client)
                row.update(round=r + 1, store=name, mode=mode, workers=workers, connections=conns)
                runs.append(row)
                print(
                    f"  round {r + 1} {name:>8} {mode:>6} {workers}w/{conns}c: "
                    f"{row['decisions_per_s']:>9,.0f}/s p99 {row['p99_ms']:.1f} ms "
                    f"server CPU {row['server_cpu_us']:.0f} us/decision "
                    f"(load {row['load_1m']})",
                    flush=True,
                )
    return runs


def _add_ratios(runs: list[dict[str, Any]], peer: str, key: str, modes: tuple[str, ...]) -> None:
    """Each run's rate (in ``modes``) over the ``peer`` store's in the same round and setting,
    as ``key``; None where there is no such peer, and for the null server's own runs."""
    rates = {
        (r["round"], r["mode"], r["workers"], r["connections"]): r["decisions_per_s"]
        for r in runs
        if r["store"] == peer
    }
    for r in runs:
        base = rates.get((r["round"], r["mode"], r["workers"], r["connections"]))
        usable = base is not None and r["mode"] in modes and r["store"] not in (peer, "null")
        r[key] = r["decisions_per_s"] / base if usable and base else None


def _add_null_ratios(runs: list[dict[str, Any]]) -> None:
    """Each single-decision run's rate over the null server's in the same round and setting,
    and each journaling run's over the floor's (singles and batches)."""
    _add_ratios(runs, "null", "vs_null", ("single",))
    _add_ratios(runs, "floor", "vs_floor", ("single", "batch"))


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _summaries(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per store, mode, workers and connections: medians over rounds with the min-max range."""
    keys = dict.fromkeys((r["store"], r["mode"], r["workers"], r["connections"]) for r in runs)
    out = []
    for store, mode, workers, conns in keys:
        mine = [
            r
            for r in runs
            if (r["store"], r["mode"], r["workers"], r["connections"])
            == (store, mode, workers, conns)
        ]
        ratios = [r["vs_null"] for r in mine if r["vs_null"] is not None]
        floors = [r["vs_floor"] for r in mine if r["vs_floor"] is not None]
        out.append(
            {
                "store": store,
                "mode": mode,
                "workers": workers,
                "connections": conns,
                "rounds": len(mine),
                "decisions_per_s": _spread([r["decisions_per_s"] for r in mine]),
                "vs_null": _spread(ratios),
                "vs_floor": _spread(floors),
                "p50_ms": _spread([r["p50_ms"] for r in mine]),
                "p99_ms": _spread([r["p99_ms"] for r in mine]),
                "server_cpu_us": _spread([r["server_cpu_us"] for r in mine]),
                "load_1m": _spread([r["load_1m"] for r in mine]),
                "counts_match": all(r["counts_match"] for r in mine),
            }
        )
    return out


def _fmt(spread: dict[str, float] | None, form: str) -> str:
    if spread is None:
        return "-"
    return f"{spread['median']:{form}} ({spread['min']:{form}}-{spread['max']:{form}})"


_UNJOURNALED = ("null", "floor")


def _table(summaries: list[dict[str, Any]]) -> None:
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    table = Table(title="refusalkit service, loopback load: medians over rounds (min-max)")
    columns = (
        "store",
        "mode",
        "w/c",
        "decisions/s",
        "vs null",
        "vs floor",
        "p50 ms",
        "p99 ms",
        "CPU us",
    )
    for col in (*columns, "load"):
        table.add_column(col, justify="right")
    table.add_column("journaled = acknowledged")
    for s in summaries:
        table.add_row(
            s["store"],
            s["mode"],
            f"{s['workers']}/{s['connections']}",
            _fmt(s["decisions_per_s"], ",.0f"),
            _fmt(s["vs_null"], ".2f"),
            _fmt(s["vs_floor"], ".2f"),
            _fmt(s["p50_ms"], ".2f"),
            _fmt(s["p99_ms"], ".1f"),
            _fmt(s["server_cpu_us"], ".0f"),
            _fmt(s["load_1m"], ".1f"),
            "-" if s["store"] in _UNJOURNALED else ("yes" if s["counts_match"] else "NO"),
        )
    Console(width=160).print(table)


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds, 1 worker")
    parser.add_argument("--workers", type=int, nargs="*", default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument(
        "--peer-src",
        type=Path,
        help="a source tree (its src/) of the code before a change: served on SQLite beside the "
        "others in the same rounds, as store 'sqlite-before'",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the floor (the service deciding with a journal that keeps nothing)",
    )
    parser.add_argument(
        "--single-connections",
        type=int,
        nargs="+",
        default=[32],
        help="connection counts for single decisions (default 32)",
    )
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=32, help=argparse.SUPPRESS)
    parser.add_argument("--duration", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--null-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--server-workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--floor-root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.rounds = args.rounds or (2 if args.quick else 3)
    args.duration = args.duration or (2.0 if args.quick else 3.0)
    args.workers = args.workers or ([1] if args.quick else [1, 2])
    args.plan = [*(("single", 0, c) for c in args.single_connections), ("batch", BATCH, 4)]
    return args


def _measure(root: Path, key: str, opts: argparse.Namespace, workers: int) -> list[dict[str, Any]]:
    """Start the null server, the floor and the SQLite and PostgreSQL servers for ``workers``,
    then run every round."""
    _, server_cores = _cores(workers)
    stores: dict[str, str | None] = {"null": "null"}
    if not opts.no_floor:
        stores["floor"] = "floor"
    stores["sqlite"] = str(root / f"journal-w{workers}.db")
    pg_name = None
    if not opts.sqlite_only:
        pg, pg_name = _postgres_store()
        if pg is None:
            print(f"PostgreSQL skipped: {pg_name}")
            pg_name = None
        else:
            stores["postgres"] = pg
    servers: dict[str, _Server] = {}
    try:
        for name, store in stores.items():
            servers[name] = _Server(root, store, workers, server_cores)
        if opts.peer_src is not None:
            before = str(root / f"journal-before-w{workers}.db")
            src = opts.peer_src.resolve() / "src"
            servers["sqlite-before"] = _Server(root, before, workers, server_cores, src)
        for server in servers.values():  # warm up
            _load(server.port, key, batch=0, connections=4, duration=0.5, cores=None)
        runs = _rounds(root, key, servers, opts, workers)
        for name, server in servers.items():
            if server.store is not None:
                _journal_size(server.store, root, verify=True)  # the whole journal verifies
                print(f"  {name} journal verified")
        return runs
    finally:
        for server in servers.values():
            server.stop()
        if pg_name is not None:
            _drop_postgres(pg_name)


def main() -> None:
    opts = _options()
    if opts.client:
        client_main(opts)
        return
    if opts.null_server:
        null_server_main(opts)
        return
    if opts.floor_server:
        floor_server_main(opts)
        return
    load_before = list(os.getloadavg())  # the machine is shared: say how busy it was
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as tmp:
        root = Path(tmp)
        key = _setup(root)
        for workers in opts.workers:
            runs += _measure(root, key, opts, workers)
    _add_null_ratios(runs)
    summaries = _summaries(runs)
    _table(summaries)
    pinning = {w: [sorted(c) if c else None for c in _cores(w)] for w in opts.workers}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "started_utc": started,
        "quick": opts.quick,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_before_after": [load_before, list(os.getloadavg())],
        "cores_client_server_by_workers": pinning,
        "rounds": opts.rounds,
        "duration_s": opts.duration,
        "targets": TARGETS,
        "floor": "the service's app whose journal keeps nothing; vs_floor = rate / its rate in "
        "the same round",
        "null_server": "the same uvicorn stack answering a fixed body; vs_null = rate / its rate "
        "in the same round (single decisions only)",
        "summaries": summaries,
        "runs": runs,
    }
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
