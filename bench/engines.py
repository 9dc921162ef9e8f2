"""Benchmark: each engine adapter against its engine called bare, and refusalkit's own engine.

The 50-rule policy and the request mix of ``bench/decide.py``, written for Cedar (cedarpy), Rego
(regopy, in-process rego-cpp) and the Agent Governance Toolkit (``PolicyEvaluator``). For each
engine, "bare" is the engine's own call on a request already in its shape; "adapter" is
``refusalkit.engines``' adapter on the refusalkit request: mapping, the engine's call, the
decision record (why-trail with keyed redaction, request digest, id, timestamp). The overhead is
adapter p50 minus bare p50 (target: at most 10 µs). First every column decides every request and
the verdicts must agree; then the columns take turns on chunks of the stream, on one core.

Pack load: the same rules scaled to 50, 200 and 1,000 (each of the 50 repeated with its patterns
varied), loaded from a file by refusalkit (``load_pack``: parse, validate, compile) and by Cedar
(read the file, ``PolicySet.from_str``), each load in a process of its own (as every ``decide``
process pays it: no pattern of the timed pack is in any cache), the loaders in turn inside each
round; medians over rounds with the min-max range, CPU time beside wall-clock time, and ratios
taken within each round. ``--peer-src DIR`` adds the refusalkit of another checkout's ``src``
(first on its ``PYTHONPATH``: ``git worktree add /tmp/base main``, then ``/tmp/base/src``) as
"before", in the same rounds.

    python bench/engines.py              # 20k requests, then pack load
    python bench/engines.py --quick      # 3k requests, then pack load
    python bench/engines.py --pack-load  # pack load only
    python bench/engines.py --pack-load --peer-src /tmp/base/src   # beside the code before

Prints a table and writes ``bench/results/engines.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cedarpy
import re2  # noqa: F401 (google-re2 loads before rego-cpp; see refusalkit.engines._rego)
import regopy
import yaml
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decide
from decide import (
    agt_call,
    agt_document,
    cedar_context,
    cedar_text,
    logging_off,
    make_requests,
    measure,
    policy_rules,
    refusalkit_engine,
)
from refusalkit.engines import AgtAdapter, CedarAdapter, EngineMapping, RegoAdapter
from refusalkit.keyring import Keyring

RESULTS = Path(__file__).resolve().parent / "results" / "engines.json"
console = Console()
Column = Callable[[dict[str, Any]], bool]  # decides one request; True when it refuses


# -- Rego: the same 50 rules, as a decision document -----------------------------------------------


def _rego_test(value: str, kind: str, pattern: str) -> list[str]:
    """Rule bodies (one per alternative) testing ``value`` as refusalkit's condition does."""
    quoted = json.dumps(pattern)
    if kind == "suffix":
        return [f"endswith({value}, {json.dumps('/' + pattern)})", f"{value} == {quoted}"]
    if kind == "under":
        return [f"startswith({value}, {json.dumps(pattern + '/')})"]
    if kind == "contains":
        return [f"contains({value}, {quoted})"]
    if kind == "equals":
        return [f"{value} == {quoted}"]
    octets = pattern.split("/", maxsplit=1)[0].split(".")[: 1 if kind == "net8" else 2]
    ip = "regex.match(`^[0-9]{1,3}([.][0-9]{1,3}){3}$`, " + value + ")"
    return [f"{ip}; startswith({value}, {json.dumps('.'.join(octets) + '.')})"]


def rego_text() -> str:
    out = ["package bench", "import rego.v1", "default allow := false"]
    for rid, effect, tool, field, kind, pattern in policy_rules():
        value = f"input.args.{field}"
        head = (
            "allow"
            if effect == "allow"
            else f'deny contains {{"rule": "{rid}", "effect": "{effect}"}}'
        )
        out.extend(
            f'{head} if {{ input.tool == "{tool}"; is_string({value}); {test} }}'
            for test in _rego_test(value, kind, pattern)
        )
    out.append('decision := {"allow": allow, "deny": deny}')
    return "\n".join(out) + "\n"


# -- the columns ----------------------------------------------------------------------------------


def cedar_columns(folder: Path, keyring: Keyring) -> tuple[Column, Column, Callable[[Any], Any]]:
    path = folder / "bench.cedar"
    path.write_text(cedar_text(), encoding="utf-8")
    adapter = CedarAdapter(path, keyring, deadline_ms=10_000)
    policies = cedarpy.PolicySet.from_str(cedar_text())
    entities = cedarpy.Entities.from_json_str("[]")

    def bare(request: dict[str, Any]) -> bool:
        tool = request["tool"]
        answer = cedarpy.is_authorized(
            {
                "principal": {"type": "Agent", "id": request["caller"]["agent"]},
                "action": {"type": "Action", "id": tool},
                "resource": {"type": "Tool", "id": tool},
                "context": request["args"],
            },
            policies,
            entities,
        )
        return not answer.allowed

    def shaped(request: dict[str, Any]) -> dict[str, Any]:
        return {**request, "args": cedar_context(request)}

    return bare, lambda r: adapter.decide(r).action.refuses, shaped


def rego_columns(folder: Path, keyring: Keyring) -> tuple[Column, Column, Callable[[Any], Any]]:
    path = folder / "bench.rego"
    path.write_text(rego_text(), encoding="utf-8")
    adapter = RegoAdapter(path, keyring, query="data.bench.decision", deadline_ms=10_000)
    interpreter = regopy.Interpreter()
    interpreter.strict_built_in_errors = True
    interpreter.add_module("bench.rego", rego_text())
    bundle = interpreter.build("data.bench.decision")

    def bare(request: dict[str, Any]) -> bool:
        interpreter.set_input(request)
        document = interpreter.query_bundle(bundle).results[0].expressions[0]
        return not (document["allow"] and not document["deny"])

    return bare, lambda r: adapter.decide(r).action.refuses, lambda r: r


def agt_columns(folder: Path, keyring: Keyring) -> tuple[Column, Column, Callable[[Any], Any]]:
    path = folder / "bench-agt.yaml"
    path.write_text(yaml.safe_dump(agt_document()), encoding="utf-8")
    mapping = EngineMapping(
        whole=None, names=(("tool_name", ("tool",)), ("call", ("args", "call")))
    )
    adapter = AgtAdapter(path, keyring, mapping=mapping, deadline_ms=10_000)
    evaluator = adapter.evaluator.__class__(list(adapter.evaluator.policies))

    def bare(request: dict[str, Any]) -> bool:
        answer = evaluator.evaluate({"tool_name": request["tool"], "call": request["args"]["call"]})
        return not answer.allowed

    def shaped(request: dict[str, Any]) -> dict[str, Any]:
        return {**request, "args": {**request["args"], "call": agt_call(request)}}

    return bare, lambda r: adapter.decide(r).action.refuses, shaped


# -- running --------------------------------------------------------------------------------------


def check_agreement(columns: dict[str, tuple[Column, list[dict[str, Any]]]]) -> int:
    """Every column refuses exactly what refusalkit's own engine refuses."""
    native, requests = columns["refusalkit"]
    expected = [native(r) for r in requests]  # a deadline overrun on a busy machine refuses:
    expected = [want and native(r) for r, want in zip(requests, expected, strict=True)]
    for name, (column, shaped) in columns.items():
        for index, (request, want) in enumerate(zip(shaped, expected, strict=True)):
            if column(request) != want and column(request) != want:  # once more: an overrun
                raise SystemExit(f"{name} disagrees on request {index}: {requests[index]}")
    return sum(expected)


def _timed(columns: dict[str, tuple[Column, list[dict[str, Any]]]]) -> dict[str, Any]:
    """``measure`` runs every column on the same request indices, each in its own shape."""
    count = len(columns["refusalkit"][1])

    def runner(column: Column, shaped: list[dict[str, Any]]) -> Callable[[Any], bool]:
        return lambda index: column(shaped[index])

    indices: list[Any] = list(range(count))
    return measure({name: runner(*pair) for name, pair in columns.items()}, indices)


# -- pack load ------------------------------------------------------------------------------------


def scaled_rules(n: int, first: int = 0) -> list[tuple[str, str, str, str, str, str]]:
    """The 50 rules repeated to ``n``, each copy's id and pattern varied (networks kept); from
    copy ``first // 50`` on (the warm-up pack shares no pattern with the packs timed)."""
    base = policy_rules()
    out = []
    for i in range(first, first + n):
        rid, effect, tool, field, kind, pattern = base[i % len(base)]
        copy = i // len(base)
        if copy and kind in ("suffix", "under", "contains", "equals") and pattern:
            pattern = f"{pattern}{copy}" if kind != "under" else f"{pattern}/v{copy}"
        out.append((f"{rid}_{copy}" if copy else rid, effect, tool, field, kind, pattern))
    return out


def _pack_files(folder: Path, n: int, first: int = 0) -> tuple[Path, Path]:
    """The ``n``-rule policy as a refusalkit YAML pack and as a Cedar policy file."""
    original = decide.policy_rules
    decide.policy_rules = lambda: scaled_rules(n, first)  # both writers read the module's rules
    try:
        ours = folder / f"pack-{n}-{first}.yaml"
        ours.write_text(yaml.safe_dump(decide.refusalkit_pack(), sort_keys=False))
        cedar = folder / f"policy-{n}-{first}.cedar"
        cedar.write_text(decide.cedar_text())
    finally:
        decide.policy_rules = original
    return ours, cedar


# One load in a process of its own, as every ``decide`` process pays it: the libraries imported
# and a small pack of other patterns loaded first (the schema compiled, nothing of the timed pack
# kept), then the timed load: wall-clock and CPU seconds (CPU time, which a busy machine inflates
# least).
_CHILD = """
import json, sys, time
kind, path, warm = sys.argv[1:4]
if kind == "cedar":
    import cedarpy
    def load(p): return cedarpy.PolicySet.from_str(open(p, encoding="utf-8").read())
else:
    from refusalkit.decide import load_pack as load
load(warm)
wall, cpu = time.perf_counter(), time.process_time()
load(path)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def _child_load(kind: str, path: Path, warm: Path, src: Path | None) -> tuple[float, float]:
    env = dict(os.environ)
    if src is not None:  # another checkout's refusalkit, first on the path
        env["PYTHONPATH"] = str(src.resolve())
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(path), str(warm)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall, cpu = json.loads(done.stdout)
    return float(wall), float(cpu)


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def pack_load(
    rounds: int = 5, sizes: tuple[int, ...] = (50, 200, 1000), peer_src: Path | None = None
) -> dict[str, Any]:
    """Seconds to load each pack, each load in a fresh process, refusalkit and Cedar (and the
    refusalkit of ``peer_src``, "before") in turn inside each round, the order rotating."""
    kinds = ["refusalkit", "cedar"] + (["before"] if peer_src is not None else [])
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = _pack_files(Path(tmp), 20, first=50 * 900)
        for n in sizes:
            files = _pack_files(Path(tmp), n)
            walls: dict[str, list[float]] = {kind: [] for kind in kinds}
            cpus: dict[str, list[float]] = {kind: [] for kind in kinds}
            for r in range(rounds):
                for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                    cedar = kind == "cedar"
                    src = peer_src if kind == "before" else None
                    args = (files[1], warm[1]) if cedar else (files[0], warm[0])
                    wall, cpu = _child_load("cedar" if cedar else "refusalkit", *args, src)
                    walls[kind].append(wall)
                    cpus[kind].append(cpu)
            out[str(n)] = _pack_row(walls, cpus)
    return out


def _pack_row(walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> dict[str, Any]:
    """Medians (min-max) per loader; ratios taken within each round, then their median."""
    row: dict[str, Any] = {
        kind: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v),
               "cpu_median_s": statistics.median(cpus[kind]), "cpu_min_s": min(cpus[kind]),
               "cpu_max_s": max(cpus[kind]), "rounds_s": v, "rounds_cpu_s": cpus[kind]}
        for kind, v in walls.items()
    }  # fmt: skip
    row["refusalkit_vs_cedar"] = _ratios(walls["refusalkit"], walls["cedar"])
    row["refusalkit_vs_cedar_cpu"] = _ratios(cpus["refusalkit"], cpus["cedar"])
    if "before" in cpus:
        row["refusalkit_vs_before_cpu"] = _ratios(cpus["refusalkit"], cpus["before"])
    return row


def _ratios(ours: list[float], theirs: list[float]) -> dict[str, float]:
    return _spread([a / b for a, b in zip(ours, theirs, strict=True)])


def report_pack_load(results: dict[str, Any]) -> None:
    table = Table(title="pack load from a file, a process per load: medians over rounds (min-max)")
    before = any("before" in row for row in results.values())
    columns = ["rules", "refusalkit s", "Cedar s", "refusalkit / Cedar", "CPU s (ours, Cedar)",
               "CPU ours / Cedar"]  # fmt: skip
    columns += ["before s", "CPU before s", "CPU ours / before"] if before else []
    for column in columns:
        table.add_column(column, justify="right")
    for n, row in results.items():
        ours, cedar, ratio = row["refusalkit"], row["cedar"], row["refusalkit_vs_cedar"]
        cells = [
            n,
            f"{ours['median_s']:.3f} ({ours['min_s']:.3f}-{ours['max_s']:.3f})",
            f"{cedar['median_s']:.4f} ({cedar['min_s']:.4f}-{cedar['max_s']:.4f})",
            f"{ratio['median']:.1f} ({ratio['min']:.1f}-{ratio['max']:.1f})",
            f"{ours['cpu_median_s']:.3f}, {cedar['cpu_median_s']:.4f}",
            _ratio_cell(row["refusalkit_vs_cedar_cpu"], 1),
        ]
        if before:
            old = row["before"]
            cells += [
                f"{old['median_s']:.3f} ({old['min_s']:.3f}-{old['max_s']:.3f})",
                f"{old['cpu_median_s']:.3f} ({old['cpu_min_s']:.3f}-{old['cpu_max_s']:.3f})",
                _ratio_cell(row["refusalkit_vs_before_cpu"], 2),
            ]
        table.add_row(*cells)
    Console(width=170).print(table)


def _ratio_cell(ratio: dict[str, float], digits: int) -> str:
    return f"{ratio['median']:.{digits}f} ({ratio['min']:.{digits}f}-{ratio['max']:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3k requests instead of 20k")
    parser.add_argument("--count", type=int, default=None, help="number of requests")
    parser.add_argument("--pack-load", action="store_true", help="only the pack-load rows")
    parser.add_argument("--rounds", type=int, default=5, help="pack-load rounds")
    parser.add_argument(
        "--peer-src", type=Path, default=None, help="pack load also with another checkout's src"
    )
    options = parser.parse_args()
    if options.pack_load:
        results = pack_load(options.rounds, peer_src=options.peer_src)
        report_pack_load(results)
        write_pack_load(results, options.peer_src)
        return
    count = options.count or (3_000 if options.quick else 20_000)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    logging_off()
    requests = make_requests(count)
    keyring = Keyring.generate()
    native_decide, native_verdict = refusalkit_engine()
    columns: dict[str, tuple[Column, list[dict[str, Any]]]] = {
        "refusalkit": (lambda r: native_verdict(native_decide(r))[0], requests)
    }
    with tempfile.TemporaryDirectory() as tmp:
        for engine, build in (("cedar", cedar_columns), ("rego", rego_columns),
                              ("agt", agt_columns)):  # fmt: skip
            bare, adapted, shape = build(Path(tmp), keyring)
            shaped = [shape(r) for r in requests]
            columns[f"{engine} bare"] = (bare, shaped)
            columns[f"{engine} adapter"] = (adapted, shaped)
    refused = check_agreement(columns)
    console.print(f"all columns agree on {count:,} requests ({refused:,} refused)")
    results = _timed(columns)
    report_table(results, count)
    loads = pack_load(options.rounds, peer_src=options.peer_src)
    report_pack_load(loads)
    write_report(results, count, refused, loads)


def write_pack_load(loads: dict[str, Any], peer_src: Path | None = None) -> None:
    """Only the pack-load rows (``--pack-load``): into the report, the rest kept as it was."""
    report = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report["pack_load"] = {"measured_utc": when, "load_average_1m": load, "packs": loads,
                           "before_src": None if peer_src is None else str(peer_src)}  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"load average (1 min): {load}; wrote {RESULTS}")


def report_table(results: dict[str, Any], count: int) -> None:
    table = Table(title=f"engines: {count:,} mixed requests, 50-rule policy, one core")
    for column in ("column", "p50 µs", "p99 µs", "decisions/s", "adapter overhead p50",
                   "vs refusalkit (p50)"):  # fmt: skip
        table.add_column(column, justify="left" if column == "column" else "right")
    native = results["refusalkit"]["p50_us"]
    for name, row in results.items():
        overhead = "-"
        if name.endswith("adapter"):
            bare = results[name.replace("adapter", "bare")]["p50_us"]
            overhead = f"{row['p50_us'] - bare:+.1f} µs"
        table.add_row(name, f"{row['p50_us']:.1f}", f"{row['p99_us']:.1f}",
                      f"{row['decisions_per_s']:,.0f}", overhead,
                      f"{row['p50_us'] / native:.1f}x")  # fmt: skip
    console.print(table)


def write_report(results: dict[str, Any], count: int, refused: int, loads: dict[str, Any]) -> None:
    overheads = {
        engine: results[f"{engine} adapter"]["p50_us"] - results[f"{engine} bare"]["p50_us"]
        for engine in ("cedar", "rego", "agt")
    }
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    console.print(f"load average (1 min) at the end of the run: {load}")
    report = {
        "benchmark": "engines",
        "requests": count,
        "refused": refused,
        "rules": 50,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "load_average_1m": load,
        "columns": results,
        "adapter_overhead_p50_us": overheads,
        "ratios": {
            f"{engine}_adapter_vs_bare_p50": results[f"{engine} adapter"]["p50_us"]
            / results[f"{engine} bare"]["p50_us"]
            for engine in ("cedar", "rego", "agt")
        }
        | {
            f"{engine}_bare_vs_refusalkit_p50": results[f"{engine} bare"]["p50_us"]
            / results["refusalkit"]["p50_us"]
            for engine in ("cedar", "rego", "agt")
        },
        "targets": {"adapter_overhead_p50_us_max": 10.0, "fastest": "refusalkit"},
        "fastest": min(results, key=lambda name: results[name]["p50_us"]),
        "pack_load": {
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load_average_1m": load,
            "packs": loads,
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
