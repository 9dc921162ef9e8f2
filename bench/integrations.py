"""Overhead of the framework integrations per tool call, and batch decisions through ``Client``.

Each framework runs its own agent loop with its own test model (one tool call, then an answer),
first bare, then with the refusalkit integration deciding the call: locally (a ``DecisionPoint``
in process, without and with a SQLite journal) and remotely (``Client`` against a real
``refusalkit serve`` on 127.0.0.1, journaling on SQLite). The peer is the bare framework in the
same run: the table shows the p50 of one agent run, the overhead over bare (p50 difference) and
the ratio. The integration's decision alone (``ToolGuard.decide``) is timed too, being the part
of the overhead that refusalkit owns. Targets: <= 50 us local and <= 1.5 ms remote overhead p50;
batch decisions through ``Client`` >= 20,000/s.

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


def _framework_rows(enforcers: dict[str, Enforcer], runs: int) -> list[dict[str, Any]]:
    rows = []
    for name, make in FRAMEWORKS.items():
        bare = _p50_us(make(None), runs)
        rows.append({"framework": name, "mode": "bare", "run_p50_us": bare})
        for mode, enforcer in enforcers.items():
            run = _p50_us(make(enforcer), runs)
            rows.append(
                {
                    "framework": name,
                    "mode": mode,
                    "run_p50_us": run,
                    "overhead_p50_us": run - bare,
                    "ratio_vs_bare": run / bare,
                }
            )
    return rows


def _decision_rows(enforcers: dict[str, Enforcer], runs: int) -> list[dict[str, Any]]:
    rows = []
    for mode, enforcer in enforcers.items():
        guard = ToolGuard(enforcer, caller)
        sync = _p50_us(lambda g=guard: g.decide("read_file", ARGS), runs * 4)
        rows.append({"mode": mode, "decide_p50_us": sync})
    return rows


def _batch_rate(client: Client, total: int) -> dict[str, Any]:
    requests = [
        {"tool": "read_file", "args": {"path": f"/w/{i}"}, "caller": caller()} for i in range(total)
    ]
    client.decide_batch(requests[:1000])  # warm up
    start = time.perf_counter()
    decisions = client.decide_batch(requests)
    seconds = time.perf_counter() - start
    assert all(d.action.value == "allow" for d in decisions), "batch fell back to fail-closed"
    return {"decisions": total, "seconds": seconds, "per_s": total / seconds}


def _target(mode: str) -> float:
    return TARGETS["remote_ms"] * 1000 if mode == "remote" else TARGETS["local_us"]


def _table(rows: list[dict[str, Any]], decide: list[dict[str, Any]], batch: dict[str, Any]) -> None:
    console = Console()
    table = Table(title="integration overhead per tool call (one agent run = one tool call)")
    for col in (
        "framework",
        "mode",
        "run p50",
        "overhead p50",
        "x bare",
        "target",
        "overhead/target",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        if r["mode"] == "bare":
            table.add_row(r["framework"], "bare", f"{r['run_p50_us']:.0f} us", "", "", "", "")
            continue
        target = _target(r["mode"])
        table.add_row(
            r["framework"], r["mode"], f"{r['run_p50_us']:.0f} us",
            f"{r['overhead_p50_us']:.0f} us", f"{r['ratio_vs_bare']:.3f}",
            f"<= {target:.0f} us", f"{r['overhead_p50_us'] / target:.2f}",
        )  # fmt: skip
    console.print(table)
    dt = Table(title="the decision alone (ToolGuard.decide), p50")
    for col in ("mode", "p50", "target", "p50/target"):
        dt.add_column(col, justify="right")
    for r in decide:
        target = _target(r["mode"])
        dt.add_row(r["mode"], f"{r['decide_p50_us']:.1f} us", f"<= {target:.0f} us",
                   f"{r['decide_p50_us'] / target:.2f}")  # fmt: skip
    console.print(dt)
    console.print(
        f"batch decisions through Client: {batch['per_s']:,.0f}/s "
        f"({batch['decisions']} in {batch['seconds']:.2f} s; target >= 20,000/s, "
        f"ratio {batch['per_s'] / TARGETS['batch_per_s']:.2f})"
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
            enforcers: dict[str, Enforcer] = {
                "local": refusalkit.enforcer(policy=pack, keyring=ring),
                "local+journal": refusalkit.enforcer(
                    policy=pack, journal=root / "local.db", keyring=ring
                ),
                "remote": client,
            }
            rows = _framework_rows(enforcers, runs)
            decide = _decision_rows(enforcers, runs)
            batch = _batch_rate(client, 20_000 if args.quick else 100_000)
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
