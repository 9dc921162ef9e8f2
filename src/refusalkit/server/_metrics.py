"""Prometheus metrics of one service process (exposition format via ``prometheus-client``).

Each app has its own registry, so several apps in one process (tests) do not collide. With
several workers and ``PROMETHEUS_MULTIPROC_DIR`` set (``refusalkit serve --workers N`` sets it),
``/metrics`` aggregates every worker's counters through prometheus-client's multiprocess collector.

The decision counts and latencies are tallied in plain dicts on the event loop and folded into
the Prometheus children once a turn of the loop (``_fold``, the first call of a turn schedules
it), before any later request is served: a ``/metrics`` call sees every decision answered before
it, as with one update a call, which cost a single decision about 3.5 µs (two locked increments
of the histogram, one of the counter, each with its checks); a tally costs a dict update.
Every call is made on the event loop's thread (the decide paths and ``/metrics`` are
coroutines), so the tallies need no lock. With several workers the counts go to the shared
files as they are made, one update a call: an answer leaves in the turn that counted it, and the
client's next call may reach another worker's ``/metrics`` before that turn ends.
"""

from __future__ import annotations

import asyncio
import bisect
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
        self._counts: dict[tuple[Action, ReasonCode | None], int] = {}  # this turn's, by kind
        self._times: dict[str, list[float]] = {}  # this turn's: a count per bucket, then the sum
        self._folding = False  # a fold is scheduled for the end of this turn
        self._children: dict[tuple[Action, ReasonCode | None], Counter] = {}  # label children,
        self._latencies: dict[str, Histogram] = {}  # made once: a fold makes no label strings
        self._shared = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))  # other workers read

    def count_decision(self, action: Action, reason_code: ReasonCode | None, n: int = 1) -> None:
        """Count ``n`` decisions of one kind (folded in at the end of the loop's turn). Keyed by
        the members themselves, so a call costs one dict update and no label strings."""
        key = (action, reason_code)
        self._counts[key] = self._counts.get(key, 0) + n
        if not self._folding:
            self._fold_soon()

    def observe_latency(self, endpoint: str, seconds: float) -> None:
        """Observe one decide call's time: its bucket's tally and the sum, folded in with the
        counts (a bucket holds the times up to its bound, as ``Histogram.observe`` puts them)."""
        tally = self._times.get(endpoint)
        if tally is None:
            tally = self._times[endpoint] = [0.0] * (len(_BUCKETS) + 2)
        tally[bisect.bisect_left(_BUCKETS, seconds)] += 1
        tally[-1] += seconds
        if not self._folding:
            self._fold_soon()

    def _fold_soon(self) -> None:
        """Fold the tallies in after this turn's callbacks; at once when no loop runs here, or
        when other workers' ``/metrics`` read this one's counts (they cannot fold them first)."""
        if self._shared:
            self._fold()
            return
        try:
            asyncio.get_running_loop().call_soon(self._fold)
        except RuntimeError:
            self._fold()
        else:
            self._folding = True

    def _fold(self) -> None:
        """Add the tallies to the Prometheus children (one increment a kind, a bucket) and
        clear them."""
        self._folding = False
        counts, self._counts = self._counts, {}
        for key, n in counts.items():
            child = self._children.get(key)
            if child is None:
                action, code = key
                labels = (action.value, "none" if code is None else code.value)
                child = self._children[key] = self.decisions.labels(*labels)
            child.inc(n)
        times, self._times = self._times, {}
        for endpoint, tally in times.items():
            latency = self._latencies.get(endpoint)
            if latency is None:
                latency = self._latencies[endpoint] = self.latency.labels(endpoint)
            _add_observations(latency, tally)

    def exposition(self) -> bytes:
        """The text exposition: this process's registry, or every worker's when multiprocess
        (this process's tallies folded in first)."""
        self._fold()
        if self._shared:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)


def _add_observations(child: Histogram, tally: list[float]) -> None:
    """Add a tally (a count per bucket, the last for +Inf, then the sum) to a histogram child:
    what as many ``observe`` calls add, through the child's bucket values (prometheus-client
    has no public call that adds observations in bulk)."""
    for value, n in zip(child._buckets, tally[:-1], strict=True):
        if n:
            value.inc(n)
    child._sum.inc(tally[-1])
