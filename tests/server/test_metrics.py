"""The service's metrics: tallies folded in once a turn expose what one update a call exposed."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from refusalkit.model import Action, ReasonCode
from refusalkit.server._metrics import _BUCKETS, ServiceMetrics

CALLS = [
    (Action.ALLOW, None, 0.0004),
    (Action.DENY, ReasonCode.POLICY_DENIED, 0.0005),  # on a bound: counted in its bucket
    (Action.DENY, ReasonCode.POLICY_DENIED, 0.0031),
    (Action.ALLOW, None, 7.5),  # past every bound: +Inf only
    (Action.DENY, ReasonCode.UNAVAILABLE, 0.02),
]


Call = tuple[Action, ReasonCode | None, float]
_calls = st.lists(
    st.tuples(
        st.sampled_from([Action.ALLOW, Action.AUDIT]), st.none(),
        st.sampled_from(_BUCKETS) | st.floats(0, 100, allow_nan=False),
    )
    | st.tuples(
        st.sampled_from([Action.DENY, Action.BLOCK]),
        st.sampled_from([ReasonCode.POLICY_DENIED, ReasonCode.UNAVAILABLE]),
        st.sampled_from(_BUCKETS) | st.floats(0, 100, allow_nan=False),
    ),
    max_size=30,
)  # fmt: skip


def _reference(calls: list[Call] = CALLS) -> bytes:
    """The exposition of the same calls, each made straight on prometheus-client's metrics."""
    registry = CollectorRegistry()
    decisions = Counter(
        "refusalkit_decisions",
        "Decisions answered, by action and reason code.",
        ["action", "reason_code"],
        registry=registry,
    )
    latency = Histogram(
        "refusalkit_decide_seconds",
        "Time to decide and journal one HTTP decide call.",
        ["endpoint"],
        buckets=_BUCKETS,
        registry=registry,
    )
    for action, code, seconds in calls:
        decisions.labels(action.value, "none" if code is None else code.value).inc()
        latency.labels("decide").observe(seconds)
    return generate_latest(registry)


def _families(text: bytes, prefix: bytes) -> list[bytes]:
    """The lines of the metrics named ``prefix...``, without the creation times."""
    lines = [line for line in text.splitlines() if prefix in line]
    return [line for line in lines if not re.search(rb"_created[{ ]", line)]


def _ours(metrics: ServiceMetrics, calls: list[Call] = CALLS) -> bytes:
    for action, code, seconds in calls:
        metrics.count_decision(action, code)
        metrics.observe_latency("decide", seconds)
    return metrics.exposition()


def test_tallies_expose_what_updates_a_call_did() -> None:
    """Off a loop each call folds at once; the exposition equals prometheus-client's own."""
    ours = _ours(ServiceMetrics())
    for prefix in (b"refusalkit_decisions", b"refusalkit_decide_seconds"):
        assert _families(ours, prefix) == _families(_reference(), prefix)


@settings(max_examples=100, deadline=None)
@given(_calls)
def test_any_calls_expose_what_updates_a_call_did(calls: list[Call]) -> None:
    """Any mix of kinds and times, bucket bounds included, exposes as prometheus-client's own
    updates do (sums compared as the exposition prints them)."""
    ours = _ours(ServiceMetrics(), calls)
    for prefix in (b"refusalkit_decisions", b"refusalkit_decide_seconds"):
        assert _families(ours, prefix) == _families(_reference(calls), prefix)


def test_on_a_loop_the_turn_s_tallies_are_folded_before_the_next_turn() -> None:
    """On a loop, the calls of one turn are in the registry once the turn's callbacks ran,
    without an exposition to fold them."""

    async def run() -> bytes:
        metrics = ServiceMetrics()
        for action, code, seconds in CALLS:
            metrics.count_decision(action, code)
            metrics.observe_latency("decide", seconds)
        await asyncio.sleep(0)
        return generate_latest(metrics.registry)

    ours = asyncio.run(run())
    for prefix in (b"refusalkit_decisions", b"refusalkit_decide_seconds"):
        assert _families(ours, prefix) == _families(_reference(), prefix)


_SHARED_WORKERS = """
import asyncio
from refusalkit.model import Action
from refusalkit.server._metrics import ServiceMetrics

answering, exposing = ServiceMetrics(), ServiceMetrics()  # two workers' metrics


async def answered_then_scraped() -> bytes:
    answering.count_decision(Action.ALLOW, None)  # the answer leaves in this same turn
    answering.observe_latency("decide", 0.0004)
    return exposing.exposition()  # another worker's /metrics, before the turn ends


print(asyncio.run(answered_then_scraped()).decode())
"""


def test_with_workers_a_decision_is_shared_before_its_answer_leaves(tmp_path: Path) -> None:
    """With ``PROMETHEUS_MULTIPROC_DIR`` the counts reach the shared files as they are made: a
    worker's answer leaves in the turn that counted it, and another worker's ``/metrics`` that
    the client calls next must see it (the end of the answering worker's turn may be far off)."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _SHARED_WORKERS], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert 'refusalkit_decisions_total{action="allow",reason_code="none"} 1.0' in out
    assert 'refusalkit_decide_seconds_count{endpoint="decide"} 1.0' in out
