"""Benchmark of the MCP proxy: tools/call round trips direct to a server vs through refusalkit.

``python bench/mcp_proxy.py [--quick]`` runs the Python MCP server of the tests
(``tests/support/mcp_upstream.py``, written with the SDK) and calls its ``echo`` tool with the
SDK's client, in the same run:

- over stdio: direct to the server, and through ``refusalkit mcp wrap``;
- over Streamable HTTP: direct to the server, and through ``refusalkit mcp proxy``;
- the gate alone, in-process: decide + journal (group commit) with 64 calls in flight.

Each proxy runs twice: with its SQLite journal on the disk, where every call waits for one
``fsync`` (the journal's durability: the call is forwarded only once its decision is on disk),
and on tmpfs (``/dev/shm``, when there is one), where it does not: the difference is the disk's
cost, the rest is the proxy's.

Latency is one call at a time (p50, p99); throughput is calls/s with 16 calls in flight on one
session. The proxy's CPU time per call (user + system, from ``/proc``, during the latency run)
is reported too: on a shared, loaded machine every extra process on the path waits for a time
slice, which inflates wall-clock latency far more than the work done, and CPU time is not
affected by that (the scheduler's nanosecond count of each thread, where the kernel keeps one;
else the process's clock ticks). Every call through the proxy is decided and journaled
(durable: WAL, ``synchronous=FULL``) before it is forwarded. Configurations alternate inside
each round; every figure is the median over rounds with its min-max range, and each "added"
figure is taken within a round (through refusalkit minus direct, the two measured moments
apart) before the median. The project's aims, for reading the figures: the proxy's own CPU at
most 0.3 ms a call, so that what it adds to p50 is the journal's ``fsync`` plus at most that.
Figures, never pass/fail.
Beside them, in the same rounds, three floors (``bench/_mcp_floor.py``), started as ``mcp wrap``
is, in front of the same server, their CPU counted the same way: relays that decide, journal and
scan nothing, built from the SDK's own stdio transports (``stdio_server`` towards the client,
``stdio_client`` towards the server, messages forwarded with anyio), from raw lines on the event
loop, and from those lines parsed and serialised by the SDK. Each one's CPU a call is set beside
``mcp wrap``'s (tmpfs journal) within each round (the floor's over the wrap's, and the wrap's
minus the floor's), then the median over rounds: how much of the proxy's CPU a relay alone
spends, and so how far down the proxy could go.
``--peer-src DIR`` adds ``mcp wrap`` run from another checkout's ``src`` (its ``PYTHONPATH``;
``git archive <commit> src | tar -x -C DIR/..``) to the same rounds, tmpfs journal: the
before-and-after of a change to the proxy, measured side by side. ``--paired BLOCKS`` (with
``--peer-src``) measures that pair alone, both sessions open at once and their calls in
alternating blocks of ``--calls`` (half the blocks with either session started first), each
block's CPU a call (the process's and its event loop's) and p50 beside the other's: the ratio
block by block, which a loaded machine's drift leaves alone. ``--stdio-only`` leaves out HTTP
and the gate alone; ``REFUSALKIT_BENCH_PROFILE=DIR`` profiles each ``mcp wrap`` over its
latency run (cProfile, ``DIR/*.prof``).
``--results-2k`` measures instead what pinning and result scanning add: the ``page`` tool's
2,000-token result, direct over stdio, through ``mcp wrap`` with neither (the proxy as it was)
and through ``mcp wrap --pin FILE`` (``--results redact``, the default, and ``--results off``:
the difference is the scanner's), each also taken over the plain wrap within each round, rounds
interleaved, medians
with their spread across rounds; and the scanner alone on that result, in-process.
Results: ``bench/results/mcp.json`` (``mcp-results.json`` for ``--results-2k``).
(Named ``mcp_proxy.py``: a script named ``mcp.py`` would shadow
the SDK it imports.)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from refusalkit.decide import DecisionPoint, load_pack  # noqa: E402
from refusalkit.keyring import Keyring  # noqa: E402
from refusalkit.mcp_proxy import Caller, open_gate  # noqa: E402
from support.mcp_helpers import (  # noqa: E402 (after the tests folder is on the path)
    PACK,
    REFUSALKIT,
    free_port,
    python_upstream,
    python_upstream_http,
    running,
    wrap_params,
)

console = Console()
ARGS = {"text": "hello"}


async def _latencies(client: Client, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool("echo", ARGS)
        out.append(time.perf_counter() - start)
        assert not result.is_error
    return out


async def _throughput(client: Client, calls: int, in_flight: int) -> float:
    per_worker = calls // in_flight

    async def worker() -> None:
        for _ in range(per_worker):
            await client.call_tool("echo", ARGS)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(in_flight):
            tg.start_soon(worker)
    return per_worker * in_flight / (time.perf_counter() - start)


Connect = Callable[[], Any]


def _cpu_seconds(pid: int, stat: str = "stat") -> float:
    """User + system CPU time of a process so far (Linux ``/proc``, in clock ticks); with
    ``stat`` naming ``task/<tid>/stat``, of that one thread."""
    fields = Path(f"/proc/{pid}/{stat}").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_ns(pid: int, tid: str) -> int | None:
    """The scheduler's count of a thread's time on a CPU so far, in nanoseconds
    (``/proc/<pid>/task/<tid>/schedstat``), or ``None`` where the kernel has no such file."""
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_pair(pid: int | None) -> tuple[float, float]:
    """The process's CPU time so far, and its event loop's (its main thread's, tid = pid).

    From the scheduler's nanosecond counts of the process's threads where the kernel has them
    (the threads of the proxy live as long as it does): the clock ticks of ``/proc/<pid>/stat``
    are 10 ms, a step of 0.05 ms a call over a block of 200 calls, as large as the changes
    measured.
    """
    if pid is None:
        return 0.0, 0.0
    loop = _run_ns(pid, str(pid))
    if loop is None:
        return _cpu_seconds(pid), _cpu_seconds(pid, f"task/{pid}/stat")
    threads = [_run_ns(pid, tid.name) for tid in Path(f"/proc/{pid}/task").iterdir()]
    return sum(ns for ns in threads if ns is not None) / 1e9, loop / 1e9


def _proxy_pid(marker: str) -> int | None:
    """The pid of the running process whose arguments include ``marker``: an ``mcp`` command's
    journal path, or a floor's tag (each unique to its configuration)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            return int(entry.name)
    return None


async def _measure(connect: Connect, calls: int, proxy: str | None) -> dict[str, float]:
    async with connect() as client:
        await _latencies(client, max(20, calls // 10))  # warm up
        pid = _proxy_pid(proxy) if proxy else None
        before = _cpu_pair(pid)
        _signal(pid, signal.SIGUSR1)
        lat = sorted(await _latencies(client, calls))
        _signal(pid, signal.SIGUSR2)
        after = _cpu_pair(pid)
        cpu, loop = (a - b if pid else float("nan") for a, b in zip(after, before, strict=True))
        rate = await _throughput(client, calls, 16)
    return {
        "p50_ms": statistics.median(lat) * 1e3,
        "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1e3,
        "calls_per_s": rate,
        "proxy_cpu_ms_per_call": cpu / calls * 1e3,
        "loop_cpu_ms_per_call": loop / calls * 1e3,
    }


def _range(values: list[float]) -> dict[str, float]:
    """Median and min-max of one figure over the rounds."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _summary(rounds: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {key: _range([r[key] for r in rounds]) for key in rounds[0]}


async def _gate_rate(journal: str, keyring: Keyring, calls: int, in_flight: int = 64) -> float:
    point = DecisionPoint(load_pack(PACK), keyring)
    caller = Caller(agent="tester", session="bench")
    async with open_gate(point, journal, keyring, server_name="py") as gate:

        async def worker(n: int) -> None:
            for _ in range(n):
                verdict = await gate.decide("echo", ARGS, caller)
                assert not verdict.refused

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(in_flight):
                tg.start_soon(worker, calls // in_flight)
        return (calls // in_flight) * in_flight / (time.perf_counter() - start)


@asynccontextmanager
async def _http_client(url: str) -> AsyncIterator[Client]:
    async with Client(url, mode="legacy") as client:
        yield client


def _journal_dirs(tmp: Path) -> dict[str, Path]:
    """Where the journals go: the disk (fsync per commit) and, if there is one, tmpfs."""
    dirs = {"disk": tmp}
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        dirs["tmpfs"] = Path(tempfile.mkdtemp(prefix="refusalkit-bench-", dir=shm))
    return dirs


def _proxy_args(up_port: int, port: int, journal: Path, ring_path: Path) -> list[str]:
    return [
        REFUSALKIT, "mcp", "proxy", "--upstream", f"http://127.0.0.1:{up_port}/mcp",
        "--policy", str(PACK), "--journal", str(journal), "--keyring", str(ring_path),
        "--server-name", "py", "--agent", "tester", "--insecure-no-auth", "--port", str(port),
    ]  # fmt: skip


def _peer_wrap(folder: Path, ring_path: Path, peer_src: Path) -> StdioServerParameters:
    """``mcp wrap`` with the refusalkit of ``peer_src`` (first on its ``PYTHONPATH``)."""
    wrapped = _wrap(str(folder / "peer.db"), ring_path)
    env = {**os.environ, "PYTHONPATH": str(peer_src.resolve())}
    return wrapped.model_copy(update={"env": env})


PROFILE_ENV = "REFUSALKIT_BENCH_PROFILE"
"""Set to a folder: each ``mcp wrap`` of the run is profiled (cProfile, the event loop's thread)
over its latency run only (the harness starts and stops the profiler with ``SIGUSR1`` and
``SIGUSR2``), into ``<folder>/<journal file name>.prof``. Profiling slows the proxy several
times over: its figures say where the time goes, they are not for reporting."""

_PROFILED = """
import cProfile, signal, sys
from refusalkit.cli import main
profile, out = cProfile.Profile(), sys.argv[1]
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
signal.signal(signal.SIGUSR2, lambda *_: (profile.disable(), profile.dump_stats(out)))
sys.argv = ["refusalkit", *sys.argv[2:]]
main()
"""


def _profiled(params: StdioServerParameters, journal: str) -> StdioServerParameters:
    """``params`` run under cProfile when ``REFUSALKIT_BENCH_PROFILE`` names a folder."""
    folder = os.environ.get(PROFILE_ENV)
    if not folder:
        return params
    out = str(Path(folder) / f"{Path(journal).parent.name}-{Path(journal).stem}.prof")
    args = ["-c", _PROFILED, out, *params.args]
    return params.model_copy(update={"command": sys.executable, "args": args})


def _signal(pid: int | None, signum: int) -> None:
    if pid is not None and os.environ.get(PROFILE_ENV):
        os.kill(pid, signum)


def _wrap(journal: str, ring_path: Path) -> StdioServerParameters:
    return _profiled(wrap_params(journal, ring_path, python_upstream()), journal)


FLOORS = {
    "sdk": "stdio floor: SDK transports relay",
    "lines": "stdio floor: raw lines relay",
    "lines-parse": "stdio floor: raw lines + SDK parsing",
}
"""The floors' modes (``bench/_mcp_floor.py``) and their names in the results."""


def _floor(mode: str, tag: str) -> StdioServerParameters:
    """A floor relay in front of the server ``mcp wrap`` wraps, found by ``tag``."""
    args = [str(HERE / "_mcp_floor.py"), mode, tag, "--", *python_upstream()]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


def _run(
    calls: int, rounds: int, tmp: Path, peer_src: Path | None = None, *, stdio_only: bool = False
) -> dict[str, Any]:
    keyring = Keyring.generate()
    ring_path = keyring.save(tmp / "keyring.json")
    journals = _journal_dirs(tmp)
    up_port = free_port()
    direct_stdio = StdioServerParameters(command=sys.executable, args=python_upstream()[1:])
    configs: dict[str, Connect] = {"stdio direct": lambda: Client(direct_stdio, mode="legacy")}
    servers = []
    if not stdio_only:
        configs["http direct"] = lambda: _http_client(f"http://127.0.0.1:{up_port}/mcp")
        servers.append((python_upstream_http(up_port), up_port))
    markers: dict[str, str] = {}
    for where, folder in journals.items():
        wrapped = _wrap(str(folder / "wrap.db"), ring_path)
        name = f"stdio mcp wrap ({where} journal)"
        configs[name] = functools.partial(Client, wrapped, mode="legacy")
        markers[name] = str(folder / "wrap.db")
        if stdio_only:
            continue
        port = free_port()
        servers.append((_proxy_args(up_port, port, folder / "proxy.db", ring_path), port))
        url = f"http://127.0.0.1:{port}/mcp"
        name = f"http mcp proxy ({where} journal)"
        configs[name] = functools.partial(_http_client, url)
        markers[name] = str(folder / "proxy.db")
    for mode, name in FLOORS.items():
        markers[name] = str(tmp / f"floor-{mode}")
        floor = _floor(mode, markers[name])
        configs[name] = functools.partial(Client, floor, mode="legacy")
    if peer_src is not None:
        folder = journals.get("tmpfs", tmp)
        peer = _peer_wrap(folder, ring_path, peer_src)
        name = "stdio mcp wrap (peer src, tmpfs journal)"
        configs[name] = lambda: Client(peer, mode="legacy")
        markers[name] = str(folder / "peer.db")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    gate: dict[str, list[float]] = {} if stdio_only else {where: [] for where in journals}
    with contextlib.ExitStack() as stack:
        for args, port in servers:
            stack.enter_context(running(args, port))
        for r in range(rounds):
            for name, connect in configs.items():
                results[name].append(anyio.run(_measure, connect, calls, markers.get(name)))
            for where, folder in journals.items() if not stdio_only else ():
                db = str(folder / f"gate{r}.db")
                gate[where].append(anyio.run(_gate_rate, db, keyring, calls * 4))
    for where, folder in journals.items():
        if where != "disk":
            shutil.rmtree(folder, ignore_errors=True)
    return {
        "configs": {name: _summary(rounds_) for name, rounds_ in results.items()},
        "overhead": _overheads(results),
        "floors": _floors(results),
        "gate_calls_per_s": {w: _range(v) for w, v in gate.items()},
        "rounds_measured": results,
    }


def _overheads(results: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Through refusalkit against direct, round by round, then the median and range."""
    out = {}
    for proxied, through in results.items():
        if "direct" in proxied:
            continue
        direct = results[f"{proxied.split()[0]} direct"]
        per_round = [
            {
                "added_p50_ms": t["p50_ms"] - d["p50_ms"],
                "added_p99_ms": t["p99_ms"] - d["p99_ms"],
                "throughput_ratio": t["calls_per_s"] / d["calls_per_s"],
                "latency_ratio_p50": t["p50_ms"] / d["p50_ms"],
            }
            for t, d in zip(through, direct, strict=True)
        ]
        out[proxied] = _summary(per_round)
    return out


def _floors(results: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """``mcp wrap`` (tmpfs journal, else disk) against each floor, round by round, then the
    median and range: the floor's CPU a call as a share of the wrap's (what a relay alone
    spends of it), and the difference (the wrap's own work above the relay)."""
    wrap = next(n for n in ("stdio mcp wrap (tmpfs journal)", "stdio mcp wrap (disk journal)")
                if n in results)  # fmt: skip
    out: dict[str, dict[str, Any]] = {}
    for name in FLOORS.values():
        per_round = [
            {
                "floor_over_wrap_cpu": f["proxy_cpu_ms_per_call"] / w["proxy_cpu_ms_per_call"],
                "wrap_minus_floor_cpu_ms": w["proxy_cpu_ms_per_call"] - f["proxy_cpu_ms_per_call"],
                "wrap_minus_floor_p50_ms": w["p50_ms"] - f["p50_ms"],
            }
            for w, f in zip(results[wrap], results[name], strict=True)
        ]
        out[name] = {"against": wrap, **_summary(per_round)}
    return out


def _shown(spread: dict[str, float], form: str) -> str:
    if spread["median"] != spread["median"]:  # NaN: no proxy process to measure
        return "-"
    return f"{spread['median']:{form}} ({spread['min']:{form}} to {spread['max']:{form}})"


def _print(report: dict[str, Any]) -> None:
    table = Table(
        title=f"MCP tools/call round trips ({report['calls']} calls per config and round, "
        f"{report['rounds']} rounds): median (min to max)"
    )
    columns = ("config", "p50 ms", "p99 ms", "calls/s (16 in flight)", "proxy CPU ms/call",
               "of which loop")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right" if column != "config" else "left")
    for name, row in report["configs"].items():
        table.add_row(
            name, _shown(row["p50_ms"], ".2f"), _shown(row["p99_ms"], ".2f"),
            _shown(row["calls_per_s"], ",.0f"), _shown(row["proxy_cpu_ms_per_call"], ".3f"),
            _shown(row["loop_cpu_ms_per_call"], ".3f"),
        )  # fmt: skip
    console.print(table)
    over = Table(title="through refusalkit vs direct, within each round: median (min to max)")
    for column in ("config", "added p50 ms", "added p99 ms", "p50 ratio", "throughput ratio"):
        over.add_column(column, justify="right" if column != "config" else "left")
    for transport, row in report["overhead"].items():
        over.add_row(
            transport, _shown(row["added_p50_ms"], "+.2f"), _shown(row["added_p99_ms"], "+.2f"),
            _shown(row["latency_ratio_p50"], ".2f"), _shown(row["throughput_ratio"], ".2f"),
        )  # fmt: skip
    console.print(over)
    floors = report.get("floors", {})
    against = next(iter(floors.values()))["against"] if floors else ""
    beside = Table(title=f"{against} against each floor, within each round: median (min to max)")
    for column in (
        "floor",
        "floor CPU / wrap CPU",
        "wrap CPU - floor CPU ms",
        "wrap p50 - floor p50 ms",
    ):
        beside.add_column(column, justify="right" if column != "floor" else "left")
    for name, row in floors.items():
        beside.add_row(
            name, _shown(row["floor_over_wrap_cpu"], ".2f"),
            _shown(row["wrap_minus_floor_cpu_ms"], "+.3f"),
            _shown(row["wrap_minus_floor_p50_ms"], "+.2f"),
        )  # fmt: skip
    if floors:
        console.print(beside)
    for where, rate in report["gate_calls_per_s"].items():
        console.print(
            f"gate alone (decide + {where} journal, 64 in flight): {_shown(rate, ',.0f')} calls/s"
        )
    console.print(f"load average: {report['load_average']}")


PAGE = {"words": 2000}
PLAIN = "mcp wrap (no pin, --results off)"
"""The proxy as it was before pinning and result scanning: what they add is taken over it."""


async def _page_latencies(connect: Connect, calls: int) -> list[float]:
    async with connect() as client:
        await client.list_tools()  # pins (trust on first use) and learns the listing
        for _ in range(max(10, calls // 10)):  # warm up
            await client.call_tool("page", PAGE)
        out = []
        for _ in range(calls):
            start = time.perf_counter()
            result = await client.call_tool("page", PAGE)
            out.append(time.perf_counter() - start)
            assert not result.is_error
        return out


def _scanner_ms(keyring: Keyring, repeats: int = 50) -> list[float]:
    """The result check alone (scanner + result filters) on the 2,000-token page, in-process."""
    from refusalkit.mcp_proxy import check_result  # noqa: PLC0415

    vocabulary = ("the", "proxy", "reads", "every", "result", "before", "a", "model", "does")
    text = " ".join(vocabulary[i % len(vocabulary)] for i in range(PAGE["words"])) + "."
    result = {"content": [{"type": "text", "text": text}]}
    hits = load_pack(PACK).result_filter_hits
    redactor = keyring.redactor()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        check_result("tools/call", result, redactor, hits)
        out.append((time.perf_counter() - start) * 1e3)
    return out


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q1, q3 = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
    return {"median": statistics.median(ordered), "q1": q1, "q3": q3}


def _results_run(calls: int, rounds: int, tmp: Path) -> dict[str, Any]:
    keyring = Keyring.generate()
    ring_path = keyring.save(tmp / "keyring.json")
    folder = _journal_dirs(tmp).get("tmpfs", tmp)
    direct = StdioServerParameters(command=sys.executable, args=python_upstream()[1:])
    configs: dict[str, Connect] = {"stdio direct": lambda: Client(direct, mode="legacy")}
    plain = wrap_params(str(folder / "wrap-plain.db"), ring_path, python_upstream(),
                        extra=["--results", "off"])  # fmt: skip
    configs[PLAIN] = lambda: Client(plain, mode="legacy")
    for mode in ("redact", "off"):
        extra = ["--pin", str(folder / f"pins-{mode}.json"), "--results", mode]
        wrapped = wrap_params(str(folder / f"wrap-{mode}.db"), ring_path, python_upstream(),
                              extra=extra)  # fmt: skip
        configs[f"mcp wrap --pin --results {mode}"] = functools.partial(
            Client, wrapped, mode="legacy"
        )
    medians: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(rounds):  # interleaved: each round runs every configuration once
        for name, connect in configs.items():
            lat = anyio.run(_page_latencies, connect, calls)
            medians[name].append(statistics.median(lat) * 1e3)
    base = medians["stdio direct"]
    return {
        "p50_ms": {name: _spread(values) for name, values in medians.items()},
        "added_p50_ms": {
            name: _spread([v - b for v, b in zip(values, base, strict=True)])
            for name, values in medians.items() if name != "stdio direct"
        },
        "over_plain_wrap_ms": {
            name: _spread([v - b for v, b in zip(values, medians[PLAIN], strict=True)])
            for name, values in medians.items() if name not in {"stdio direct", PLAIN}
        },
        "scanner_ms": _spread(_scanner_ms(keyring)),
        "journal": "tmpfs" if folder != tmp else "disk",
    }  # fmt: skip


def _print_results(report: dict[str, Any]) -> None:
    title = (
        f"tools/call with a 2,000-token result ({report['calls']} calls x {report['rounds']} "
        "rounds; median \\[q1, q3] of the round medians)"
    )
    table = Table(title=title)
    for column in ("config", "p50 ms", "added p50 ms"):
        table.add_column(column, justify="right" if column != "config" else "left")
    for name, row in report["p50_ms"].items():
        added = report["added_p50_ms"].get(name)
        shown = "-" if added is None else (
            f"{added['median']:+.2f} [{added['q1']:+.2f}, {added['q3']:+.2f}]"
        )  # fmt: skip
        table.add_row(name, f"{row['median']:.2f} [{row['q1']:.2f}, {row['q3']:.2f}]", shown)
    console.print(table)
    for name, over in report["over_plain_wrap_ms"].items():
        console.print(
            f"{name} over {PLAIN}: {over['median']:+.2f} ms [{over['q1']:+.2f}, {over['q3']:+.2f}]"
        )
    scan = report["scanner_ms"]
    spread = f"[{scan['q1']:.3f}, {scan['q3']:.3f}]"
    console.print(
        f"scanner + result filters alone: {scan['median']:.3f} ms {spread}; "
        f"load average {report['load_average']}"
    )


async def _block(client: Client, pid: int, calls: int) -> dict[str, float]:
    """One block of calls on an open session: its p50 and the proxy's CPU a call over it."""
    before = _cpu_pair(pid)
    lat = await _latencies(client, calls)
    after = _cpu_pair(pid)
    cpu, loop = ((a - b) / calls * 1e3 for a, b in zip(after, before, strict=True))
    return {"p50_ms": statistics.median(lat) * 1e3, "cpu_ms": cpu, "loop_cpu_ms": loop}


async def _paired_blocks(sessions: dict[str, StdioServerParameters], blocks: int, calls: int,
                         markers: dict[str, str]) -> dict[str, list[dict[str, float]]]:  # fmt: skip
    out: dict[str, list[dict[str, float]]] = {name: [] for name in sessions}
    async with contextlib.AsyncExitStack() as stack:
        clients = {n: await stack.enter_async_context(Client(p, mode="legacy"))
                   for n, p in sessions.items()}  # fmt: skip
        pids = {name: _proxy_pid(markers[name]) for name in clients}
        for client in clients.values():
            await _latencies(client, 100)  # warm up
        for i in range(blocks):
            for name in list(clients)[:: 1 if i % 2 else -1]:  # who goes first alternates
                pid = pids[name]
                assert pid is not None
                out[name].append(await _block(clients[name], pid, calls))
    return out


def _paired(blocks: int, calls: int, peer_src: Path) -> dict[str, Any]:
    """``mcp wrap`` from this checkout and from ``peer_src``, both sessions open at once, their
    calls in alternating blocks (tmpfs journals): each block's figures taken within moments of
    the other's, so the machine's load drifts out of the ratio.

    Half the blocks run with this checkout's session started first, half (fresh processes and
    journals) with the peer's first: the session started second was measured cheaper by itself
    (this code against itself, 30 blocks at load 4: 0.93), which one order alone puts into the
    ratio."""
    measured: dict[str, list[dict[str, float]]] = {"new": [], "peer": []}
    with tempfile.TemporaryDirectory() as tmp:
        ring_path = Keyring.generate().save(Path(tmp) / "keyring.json")
        base = _journal_dirs(Path(tmp)).get("tmpfs", Path(tmp))
        for half, order in enumerate((("new", "peer"), ("peer", "new"))):
            folder = base / f"order-{half}"
            folder.mkdir(parents=True, exist_ok=True)
            both = {"new": _wrap(str(folder / "wrap.db"), ring_path),
                    "peer": _peer_wrap(folder, ring_path, peer_src)}  # fmt: skip
            markers = {"new": str(folder / "wrap.db"), "peer": str(folder / "peer.db")}
            sessions = {name: both[name] for name in order}
            share = (blocks + 1 - half) // 2
            for name, rows in anyio.run(_paired_blocks, sessions, share, calls, markers).items():
                measured[name].extend(rows)
        if base != Path(tmp):
            shutil.rmtree(base, ignore_errors=True)
    ratios = {key: _range([n[key] / p[key] for n, p in zip(measured["new"], measured["peer"],
                                                            strict=True) if p[key]])
              for key in ("cpu_ms", "loop_cpu_ms", "p50_ms")}  # fmt: skip
    return {"blocks": measured, "summary": {n: _summary(b) for n, b in measured.items()},
            "new_over_peer": ratios}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls, three rounds")
    parser.add_argument("--results-2k", action="store_true", help="pinning + result scanning")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--peer-src", type=Path, default=None, help="a checkout's src to compare")
    parser.add_argument(
        "--stdio-only",
        action="store_true",
        help="only stdio, direct and mcp wrap (no HTTP, no gate alone)",
    )
    parser.add_argument("--calls", type=int, default=None, help="calls per config and round")
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        metavar="BLOCKS",
        help="with --peer-src: both wraps open at once, BLOCKS alternating blocks of --calls each",
    )
    parser.add_argument("--rounds", type=int, default=None, help="rounds")
    options = parser.parse_args()
    if options.results_2k:
        calls, rounds = (100, 3) if options.quick else (300, 5)
        with tempfile.TemporaryDirectory() as tmp:
            measured = _results_run(calls, rounds, Path(tmp))
        report = {"benchmark": "mcp-results-2k", "calls": calls, "rounds": rounds,
                  "cpus": os.cpu_count(), "load_average": os.getloadavg(), **measured}  # fmt: skip
        _print_results(report)
        out = options.out or HERE / "results" / "mcp-results.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {out}")
        return
    if options.paired:
        if options.peer_src is None:
            parser.error("--paired needs --peer-src")
        calls = options.calls or 200
        load_before = os.getloadavg()
        paired = _paired(options.paired, calls, options.peer_src)
        paired |= {"benchmark": "mcp-paired", "calls_per_block": calls,
                   "load_average_before_after": [load_before, os.getloadavg()]}  # fmt: skip
        for name, row in paired["summary"].items():
            console.print(name, {k: _shown(v, ".3f") for k, v in row.items()})
        for key, spread in paired["new_over_peer"].items():
            console.print(f"new / peer, {key}, block by block: {_shown(spread, '.2f')}")
        console.print(f"load average before, after: {paired['load_average_before_after']}")
        out = options.out or HERE / "results" / "mcp-paired.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(paired, indent=2) + "\n", encoding="utf-8")
        return
    options.out = options.out or HERE / "results" / "mcp.json"
    calls, rounds = (300, 3) if options.quick else (600, 5)
    calls, rounds = options.calls or calls, options.rounds or rounds
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        measured = _run(calls, rounds, Path(tmp), options.peer_src, stdio_only=options.stdio_only)
    report = {
        "benchmark": "mcp",
        "calls": calls,
        "rounds": rounds,
        "quick": options.quick,
        "peer_src": None if options.peer_src is None else str(options.peer_src),
        "cpus": os.cpu_count(),
        "load_average_before_after": [load_before, os.getloadavg()],
        "load_average": os.getloadavg(),
        **measured,
    }
    _print(report)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {options.out}")


if __name__ == "__main__":
    main()
