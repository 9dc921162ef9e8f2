"""Garbage-collector settings for a serving process: the service and the MCP proxies (not for an
app built in someone's process).

A decide batch allocates thousands of short-lived dicts. CPython's default thresholds start a
young collection every 700 allocations and, every so often, a full one that walks every
long-lived object (modules, the pack, the app) again: a pause of tens of milliseconds, seen as
the batch endpoint's p99, and in a proxy a pause long enough to pass a decision's deadline, so
a call is refused ``unavailable`` for no fault of its own. Decisions are freed by reference
counting (they hold no cycles), so the collector is moved past what start-up built
(``gc.freeze``) and run less often.
"""

from __future__ import annotations

import gc

__all__ = ["GC_THRESHOLDS", "tune_gc"]

GC_THRESHOLDS = (50_000, 20, 100)
"""Young-generation allocations before a collection, then the older generations' ratios."""


def tune_gc() -> None:
    """Collect once, freeze what survives, and raise the thresholds (serving processes only:
    ``refusalkit serve``, ``mcp wrap`` and ``mcp proxy``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
