"""Chat turn guard overhead: guarded turn vs the bare responder, same run.

For 200-token and 2,000-token articulations, every predicate on (five safety boundaries with a
harm classifier and a DecisionPoint on the bundled ``agent-tools.yaml`` pack deciding one proposed
tool call per turn, the default ethics pack), it times:

* the bare responder call, and the same responder wrapped in ``ChatRuntime.turn``;
* both for an in-process callable (pure guard cost) and for the real OpenAI-compatible loopback
  server (``tests/support/openai_server.py``) behind ``EndpointResponder``.

Reports medians and p95 per turn, the added time (guarded - bare) and the ratio guarded/bare.
Target: <= 1 ms added at 2,000 tokens. ``--quick`` runs fewer turns.

    python bench/chat.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from refusalkit.chat import ChatRuntime, EndpointResponder, Reply, ToolCall
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.openai_server import OpenAIServer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "chat.json"
WORDS = [
    "the",
    "a",
    "model",
    "answer",
    "system",
    "data",
    "value",
    "request",
    "policy",
    "user",
    "turn",
    "because",
    "which",
    "when",
    "from",
    "about",
    "would",
    "could",
    "report",
    "results",
    "table",
    "number",
    "first",
    "second",
    "third",
    "example",
    "version",
    "tool",
    "call",
    "output",
    "input",
    "analysis",
    "review",
    "summary",
    "note",
    "2025",
    "42",
    "3.5",
    "section",
    "figure",
]
USER_INPUT = "Please summarise the quarterly report and save it to the workspace."
TOOL_CALL = ToolCall("fs.write", {"path": "/workspace/src/summary.md", "content": "summary"})
HARMFUL = frozenset({"bomb", "nerve agent", "ransomware"})


def articulation(tokens: int, seed: int) -> str:
    """Deterministic prose of about ``tokens`` tokens (0.75 words a token, sentences of 15)."""
    rng = random.Random(seed)
    words = [rng.choice(WORDS) for _ in range(int(tokens * 0.75))]
    return " ".join(w + ("." if i % 15 == 14 else "") for i, w in enumerate(words))


def harm_classifier(text: str) -> bool:
    """A keyword harm classifier (the guard only needs a callable)."""
    lowered = text.lower()
    return any(term in lowered for term in HARMFUL)


def _runtime(responder: Any, keyring: Keyring, dp: DecisionPoint) -> ChatRuntime:
    return ChatRuntime(
        responder, keyring=keyring, decision_point=dp, harm_classifier=harm_classifier
    )


def _time(fn: Callable[[], Any], turns: int) -> list[float]:
    samples = []
    for _ in range(turns):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def _measure(responder: Any, keyring: Keyring, dp: DecisionPoint, turns: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": USER_INPUT}]
    runtime = _runtime(responder, keyring, dp)
    for _ in range(min(20, turns)):  # warm up both paths
        responder(messages)
        runtime.turn(USER_INPUT)

    def guarded() -> None:
        runtime.history.clear()  # send exactly what the bare call sends: one user message
        runtime.turn(USER_INPUT)

    bare: list[float] = []
    guard: list[float] = []
    for _ in range(5):  # interleave so both see the same machine load
        bare += _time(lambda: responder(messages), turns // 5)
        guard += _time(guarded, turns // 5)
    return _summary(bare, guard)


def _summary(bare: list[float], guard: list[float]) -> dict[str, Any]:
    def p95(xs: list[float]) -> float:
        return statistics.quantiles(xs, n=20)[-1]

    b, g = statistics.median(bare), statistics.median(guard)
    return {
        "turns": len(guard),
        "bare_median_us": b * 1e6,
        "bare_p95_us": p95(bare) * 1e6,
        "guarded_median_us": g * 1e6,
        "guarded_p95_us": p95(guard) * 1e6,
        "added_us": (g - b) * 1e6,
        "ratio": g / b if b else float("inf"),
    }


def run(quick: bool) -> list[dict[str, Any]]:
    keyring = Keyring.generate()
    dp = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring)
    rows = []
    for tokens in (200, 2000):
        text = articulation(tokens, seed=tokens)
        reply = Reply(text, (TOOL_CALL,))

        def callable_responder(_messages: Any, reply: Reply = reply) -> Reply:
            return reply

        turns = 500 if quick else 5000
        rows.append(
            {
                "responder": "callable",
                "tokens": tokens,
                "chars": len(text),
                **_measure(callable_responder, keyring, dp, turns),
            }
        )
        with OpenAIServer(lambda _body, text=text: text) as server:
            endpoint = EndpointResponder(server.base_url, "bench-model", timeout=10)
            turns = 100 if quick else 500
            rows.append(
                {
                    "responder": "loopback endpoint",
                    "tokens": tokens,
                    "chars": len(text),
                    **_measure(endpoint, keyring, dp, turns),
                }
            )
            endpoint.close()
    return rows


def render(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title="refusalkit chat: guard overhead per turn (all predicates on)")
    for col in (
        "responder",
        "tokens",
        "bare median µs",
        "guarded median µs",
        "guarded p95 µs",
        "added µs",
        "guarded / bare",
        "≤ 1 ms added",
    ):
        table.add_column(col, justify="right" if col != "responder" else "left")
    for r in rows:
        ok = ("yes" if r["added_us"] <= 1000 else "NO") if r["responder"] == "callable" else "-"
        table.add_row(
            r["responder"],
            str(r["tokens"]),
            f"{r['bare_median_us']:.1f}",
            f"{r['guarded_median_us']:.1f}",
            f"{r['guarded_p95_us']:.1f}",
            f"{r['added_us']:.1f}",
            f"{r['ratio']:.2f}x",
            ok,
        )
    console.print(table)
    console.print(
        "The callable rows are the guard's own cost (the target applies there). The loopback rows "
        "put the same guard beside a real HTTP round trip to a server on 127.0.0.1."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns (a smoke run)")
    args = parser.parse_args()
    rows = run(args.quick)
    render(rows, Console(width=150))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quick": args.quick,
        "target_added_us_at_2000_tokens": 1000,
    }
    RESULTS.write_text(
        json.dumps({"benchmark": "chat", "meta": meta, "rows": rows}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
