"""Prometheus metrics of one service process (exposition format via ``prometheus-client``).

Each app has its own registry, so several apps in one process (tests) do not collide. With
several workers and ``PROMETHEUS_MULTIPROC_DIR`` set (``refusalkit serve --workers N`` sets it),
``/metrics`` aggregates every worker's counters through prometheus-client's multiprocess collector.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from refusalkit.model import Action, ReasonCode

__all__ = ["ServiceMetrics"]

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ServiceMetrics:
    """Decisions by action and reason code, latency, journal size, errors, reloads."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.decisions = Counter(
            "refusalkit_decisions",
            "Decisions answered, by action and reason code.",
            ["action", "reason_code"],
            registry=r,
        )
        self.latency = Histogram(
            "refusalkit_decide_seconds",
            "Time to decide and journal one HTTP decide call.",
            ["endpoint"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.journal_size = Gauge(
            "refusalkit_journal_size",
            "Entries in the journal, as last seen by this process.",
            registry=r,
            multiprocess_mode="max",
        )
        self.errors = Counter(
            "refusalkit_errors", "Errors answered, by error code.", ["code"], registry=r
        )
        self.reloads = Counter(
            "refusalkit_pack_reloads", "Pack reloads, by result.", ["result"], registry=r
        )
        self._children: dict[tuple[Action, ReasonCode | None], Counter] = {}
        self._latencies: dict[str, Histogram] = {}

    def count_decision(self, action: Action, reason_code: ReasonCode | None, n: int = 1) -> None:
        """Count ``n`` decisions of one kind. On the hot path: the label child is cached, keyed
        by the members themselves, so a hit costs one dict lookup and no label strings."""
        child = self._children.get((action, reason_code))
        if child is None:
            labels = (action.value, "none" if reason_code is None else reason_code.value)
            child = self._children[action, reason_code] = self.decisions.labels(*labels)
        child.inc(n)

    def observe_latency(self, endpoint: str, seconds: float) -> None:
        """Observe one decide call's time (the label child cached, as for ``count_decision``)."""
        child = self._latencies.get(endpoint)
        if child is None:
            child = self._latencies[endpoint] = self.latency.labels(endpoint)
        child.observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition: this process's registry, or every worker's when multiprocess."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)
