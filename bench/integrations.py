"""Overhead of the framework integrations per tool call, and batch decisions through ``Client``.

Each framework runs its own agent loop with its own test model (one tool call, then an answer),
first bare, then with the refusalkit integration deciding the call: locally (a ``DecisionPoint``
in process, without and with a SQLite journal) and remotely (``Client`` against a real
``refusalkit serve`` on 127.0.0.1, journaling on SQLite). The peer is the bare framework in the
same run, the runs of all modes taken in turn: the table shows the p50 of one agent run, its
overhead over bare (p50 difference), and the ratio. "hook only" is the integration answering a
precomputed decision: what the framework's hook machinery costs; "beyond hook" is the rest, the
deciding. The decision alone (``ToolGuard.decide``) is timed too. Targets: <= 50 us local and
<= 1.5 ms remote overhead p50; batch decisions through ``Client`` >= 20,000/s.

    python bench/integrations.py            # full run
    python bench/integrations.py --quick    # a short run
"""

# ruff: noqa: ARG001, ARG002 (the frameworks' model signatures)
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
from agents import Agent as OpenAIAgent
from agents import Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from rich.console import Console
from rich.table import Table

import refusalkit
from refusalkit.client import Client
from refusalkit.enforce import Enforcer
from refusalkit.integrations import ToolGuard
from refusalkit.integrations.langchain import RefusalMiddleware
from refusalkit.integrations.openai_agents import refusal_guardrail
from refusalkit.integrations.pydantic_ai import RefusalCapability
from refusalkit.keyring import Keyring
from refusalkit.model import Decision
from refusalkit.server import KeyStore, Scope

RESULTS = Path(__file__).resolve().parent / "results" / "integrations.json"
TARGETS = {"local_us": 50.0, "remote_ms": 1.5, "batch_per_s": 20000.0}
PACK = """\
policy: bench-integrations
version: v1
default: deny
rules:
  - id: reads_ok
    effect: allow
    when: {tool: read_file}
  - id: no_deletes
    effect: deny
    when: {tool: delete_file}
"""
ARGS = {"path": "/workspace/a.txt"}


def caller() -> dict[str, str]:
    return {"agent": "bench", "session": "s-1"}


def read_file(path: str) -> str:
    """Read a file."""
    return path


# -- one agent run per framework -------------------------------------------------------------


def langchain_runner(enforcer: Enforcer | None) -> Callable[[], None]:
    class OneCall(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "one-call"

        def bind_tools(self, tools: Any, **kwargs: Any) -> OneCall:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):
                return ChatResult(generations=[ChatGeneration(message=AIMessage("done"))])
            call = {"name": "read_file", "args": ARGS, "id": "c1"}
            message = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    middleware = [] if enforcer is None else [RefusalMiddleware(enforcer, caller=caller)]
    agent = create_agent(OneCall(), tools=[tool(read_file)], middleware=middleware)
    question = {"messages": [{"role": "user", "content": "go"}]}
    return lambda: agent.invoke(question) and None


def pydantic_ai_runner(enforcer: Enforcer | None) -> Callable[[], None]:
    def model(messages: Any, info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("read_file", ARGS)])
        return ModelResponse(parts=[TextPart("done")])

    caps = [] if enforcer is None else [RefusalCapability(enforcer, caller=caller)]
    agent = Agent(FunctionModel(model), tools=[read_file], capabilities=caps)
    return lambda: agent.run_sync("go") and None


def openai_agents_runner(enforcer: Enforcer | None) -> Callable[[], None]:
    set_tracing_disabled(disabled=True)
    guards = [] if enforcer is None else [refusal_guardrail(enforcer, caller=caller)]
    model = ScriptedModel()
    agent = OpenAIAgent(
        name="bench",
        model=model,
        tools=[function_tool(read_file, tool_input_guardrails=guards)],
    )

    def run() -> None:
        model.extend([[function_call("read_file", ARGS, call_id="c1")], [assistant_message("ok")]])
        Runner.run_sync(agent, "go")

    return run


FRAMEWORKS = {
    "langchain": langchain_runner,
    "pydantic-ai": pydantic_ai_runner,
    "openai-agents": openai_agents_runner,
}


# -- the service ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Service:
    """A real ``refusalkit serve`` on loopback, journaling to SQLite."""

    def __init__(self, root: Path, pack: Path, ring: Path) -> None:
        _, self.key = KeyStore(root / "keys.json").add("bench", {Scope.DECIDE, Scope.READ})
        self.port = _free_port()
        cli = [sys.executable, "-c", "from refusalkit.cli import main; main()", "serve"]
        self.proc = subprocess.Popen(
            [*cli, "--policy", str(pack), "--journal", str(root / "service.db"),
             "--keys-file", str(root / "keys.json"), "--keyring", str(ring),
             "--port", str(self.port), "--max-batch", "1000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        for _ in range(300):
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the service did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=15)


# -- measuring -----------------------------------------------------------------------------


def _p50_us(fn: Callable[[], Any], runs: int) -> float:
    for _ in range(max(5, runs // 20)):  # warm up
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


class Fixed:
    """An enforcer that answers one precomputed decision: the integration's own cost (the
    framework's hook and the request it builds) without any deciding."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    def decide(self, request: Any) -> Decision:
        return self.decision

    async def adecide(self, request: Any) -> Decision:
        return self.decision


def _interleaved(runners: dict[str, Callable[[], None]], runs: int) -> dict[str, float]:
    """p50 of each runner, taken in turn so drift in the machine's load hits all alike."""
    for run in runners.values():
        for _ in range(max(5, runs // 20)):
            run()
    times: dict[str, list[float]] = {mode: [] for mode in runners}
    for _ in range(runs):
        for mode, run in runners.items():
            start = time.perf_counter()
            run()
            times[mode].append(time.perf_counter() - start)
    return {mode: statistics.median(t) * 1e6 for mode, t in times.items()}


def _framework_rows(enforcers: dict[str, Enforcer], runs: int) -> list[dict[str, Any]]:
    rows = []
    for name, make in FRAMEWORKS.items():
        runners = {"bare": make(None), **{mode: make(e) for mode, e in enforcers.items()}}
        p50 = _interleaved(runners, runs)
        bare = p50.pop("bare")
        hook = p50.get("hook only", bare)
        rows.append({"framework": name, "mode": "bare", "run_p50_us": bare})
        for mode, run in p50.items():
            rows.append(
                {
                    "framework": name,
                    "mode": mode,
                    "run_p50_us": run,
                    "overhead_p50_us": run - bare,
                    "beyond_hook_p50_us": run - hook,
                    "ratio_vs_bare": run / bare,
                }
            )
    return rows


def _decision_rows(enforcers: dict[str, Enforcer], raw: RawHttp, runs: int) -> list[dict[str, Any]]:
    """``ToolGuard.decide`` per mode, and the peer of the remote one: the same POST by bare httpx
    on a kept-alive connection, without building a request or reading a decision."""
    guards = {mode: ToolGuard(e, caller) for mode, e in enforcers.items()}
    runners: dict[str, Callable[[], Any]] = {
        mode: (lambda g=guard: g.decide("read_file", ARGS)) for mode, guard in guards.items()
    }
    remote = runners.pop("remote")
    # each local mode in its own block: taken in turn, a 4 us decision right after an fsync-bound
    # one runs on cold caches, which measures the neighbour rather than the decision; the remote
    # one and its peer are both network-bound, so they are taken in turn (same load for both)
    rows = [
        {"mode": mode, "decide_p50_us": _p50_us(run, runs * 2)} for mode, run in runners.items()
    ]
    pair = _interleaved({"remote": remote, "remote, bare httpx (peer)": raw.decide}, runs * 2)
    rows.extend({"mode": mode, "decide_p50_us": us} for mode, us in pair.items())
    return rows


class RawHttp:
    """The service called with nothing but httpx: the floor under ``Client``."""

    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"})
        self.body = orjson.dumps({"tool": "read_file", "args": ARGS, "caller": caller()})

    def decide(self) -> None:
        self.http.post("/v1/decide", content=self.body).raise_for_status()

    def batch(self, requests: list[dict[str, Any]], size: int = 1000) -> None:
        for i in range(0, len(requests), size):
            body = orjson.dumps({"requests": requests[i : i + size]})
            self.http.post("/v1/decide/batch", content=body).raise_for_status()


def _batch_rates(client: Client, raw: RawHttp, total: int) -> dict[str, Any]:
    """Decisions/s through ``Client.decide_batch`` and through bare httpx (the peer), in turn."""
    requests = [
        {"tool": "read_file", "args": {"path": f"/w/{i}"}, "caller": caller()} for i in range(total)
    ]
    client.decide_batch(requests[:1000])  # warm up
    raw.batch(requests[:1000])
    seconds = {"client": 0.0, "bare httpx": 0.0}
    for _ in range(2):
        start = time.perf_counter()
        decisions = client.decide_batch(requests)
        seconds["client"] += time.perf_counter() - start
        assert all(d.action.value == "allow" for d in decisions), "batch fell back to fail-closed"
        start = time.perf_counter()
        raw.batch(requests)
        seconds["bare httpx"] += time.perf_counter() - start
    rates = {k: 2 * total / v for k, v in seconds.items()}
    return {"decisions": 2 * total, "per_s": rates["client"], "peer_per_s": rates["bare httpx"]}


def _target(mode: str) -> float:
    return TARGETS["remote_ms"] * 1000 if mode == "remote" else TARGETS["local_us"]


def _table(rows: list[dict[str, Any]], decide: list[dict[str, Any]], batch: dict[str, Any]) -> None:
    console = Console(width=120)
    table = Table(title="integration overhead per tool call (one agent run = one tool call)")
    cols = ("framework", "mode", "run p50", "over bare", "beyond hook", "x bare", "target")
    for col in cols:
        table.add_column(col, justify="right")
    for r in rows:
        if r["mode"] == "bare":
            table.add_row(r["framework"], "bare", f"{r['run_p50_us']:.0f} us", "", "", "", "")
            continue
        table.add_row(
            r["framework"], r["mode"], f"{r['run_p50_us']:.0f} us",
            f"{r['overhead_p50_us']:.0f} us", f"{r['beyond_hook_p50_us']:.0f} us",
            f"{r['ratio_vs_bare']:.3f}", f"<= {_target(r['mode']):.0f} us",
        )  # fmt: skip
    console.print(table)
    dt = Table(title="the decision alone (ToolGuard.decide), p50")
    for col in ("mode", "p50", "target", "p50/target"):
        dt.add_column(col, justify="right")
    for r in decide:
        target = _target(r["mode"].split(",")[0])
        dt.add_row(r["mode"], f"{r['decide_p50_us']:.1f} us", f"<= {target:.0f} us",
                   f"{r['decide_p50_us'] / target:.2f}")  # fmt: skip
    console.print(dt)
    console.print(
        f"batch decisions through Client: {batch['per_s']:,.0f}/s; bare httpx (peer, no "
        f"decoding): {batch['peer_per_s']:,.0f}/s; "
        f"Client/peer {batch['per_s'] / batch['peer_per_s']:.2f}; "
        f"target >= 20,000/s, Client/target {batch['per_s'] / TARGETS['batch_per_s']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args()
    runs = 100 if args.quick else 600
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pack = root / "pack.yaml"
        pack.write_text(PACK, encoding="utf-8")
        ring = Keyring.generate().save(root / "keyring.json")
        service = Service(root, pack, ring)
        try:
            client = Client(service.url, api_key=service.key)
            local = refusalkit.enforcer(policy=pack, keyring=ring)
            enforcers: dict[str, Enforcer] = {
                "hook only": Fixed(local.decide({"tool": "read_file", "args": ARGS})),
                "local": local,
                "local+journal": refusalkit.enforcer(
                    policy=pack, journal=root / "local.db", keyring=ring
                ),
                "remote": client,
            }
            raw = RawHttp(service.url, service.key)
            rows = _framework_rows(enforcers, runs)
            decide = _decision_rows(enforcers, raw, runs)
            batch = _batch_rates(client, raw, 10_000 if args.quick else 50_000)
            client.close()
        finally:
            service.stop()
    _table(rows, decide, batch)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "integrations",
                "quick": args.quick,
                "runs": runs,
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "load_avg": os.getloadavg(),
                },
                "targets": TARGETS,
                "frameworks": rows,
                "decision": decide,
                "batch": batch,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
