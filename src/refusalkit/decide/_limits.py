"""Budgets: a pack's ``limits`` bound how many calls a session may make (docs/design/policy.md,
Limits).

A limit has an ``id``, ``per: session``, an optional ``tools`` condition (as a rule's ``tool``),
``max_calls`` and an optional ``window_s``. The decision point counts the calls it *allows* (or
audits) of the tools a limit covers, per ``caller.session``; a call that would exceed a limit is
refused ``rate-limited`` (reason codes version 2) by the limit's id, with how long until it may
be retried (with a window: until the oldest counted call leaves it; without one: never in this
session).

The count lives in the memory of the decision point (one process): the CLI counts within one
run, the service and the MCP proxies for as long as they run. Several nodes share nothing: each
counts the calls it decided, so a session spread over N nodes gets up to N times its budget.
Requests without a session share one count. At most ``MAX_SESSIONS`` sessions are tracked per
limit; the least recently counted is forgotten first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from refusalkit.decide._logic import Tri

if TYPE_CHECKING:
    from refusalkit.decide._compile import CondSpec

__all__ = ["MAX_SESSIONS", "CompiledLimit", "Limiter", "Overrun"]

MAX_SESSIONS = 65536


@dataclass(frozen=True, slots=True)
class CompiledLimit:
    """One ``limits`` entry, compiled: the tools it covers (None: every tool) and its budget."""

    id: str
    tools: CondSpec | None
    max_calls: int
    window_s: float | None
    message: str | None

    def covers(self, tool: str) -> bool:
        """Whether calls of ``tool`` count against this limit."""
        return self.tools is None or self.tools.cond.check(tool) is Tri.TRUE

    def test(self) -> str:
        """The why-trail text of the limit."""
        per = "per session" if self.window_s is None else f"per session in {self.window_s:g} s"
        return f"at most {self.max_calls} call(s) {per}"


class Overrun(NamedTuple):
    """A call over a limit: the limit, and the seconds until a retry may pass (None: never)."""

    limit: CompiledLimit
    retry_after_s: float | None

    def message(self) -> str:
        """The refusal's message: the limit's own, and when to retry."""
        base = self.limit.message or f"The limit {self.limit.id} is reached."
        if self.retry_after_s is None:
            return f"{base} No more calls in this session."
        return f"{base} Retry in {math.ceil(self.retry_after_s)} s."


class Limiter:
    """The calls counted per limit and session, in this process. Safe to share between threads."""

    def __init__(
        self, limits: tuple[CompiledLimit, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[str, OrderedDict[Any, deque[float]]] = {
            x.id: OrderedDict() for x in limits
        }

    def take(self, tool: str, session: Any) -> Overrun | None:
        """Count one call of ``tool`` in ``session``, or say which limit it would exceed (then
        nothing is counted)."""
        covering = [x for x in self.limits if x.covers(tool)]
        if not covering:
            return None
        key = session if isinstance(session, str) else None
        with self._lock:
            now = self._clock()
            for limit in covering:
                over = self._over(limit, key, now)
                if over is not None:
                    return over
            for limit in covering:
                self._count(limit, key, now)
        return None

    def _over(self, limit: CompiledLimit, key: Any, now: float) -> Overrun | None:
        calls = self._calls[limit.id].get(key)
        if calls is None:
            return None
        if limit.window_s is not None:
            while calls and calls[0] <= now - limit.window_s:
                calls.popleft()
        if len(calls) < limit.max_calls:
            return None
        retry = None if limit.window_s is None else calls[0] + limit.window_s - now
        return Overrun(limit, retry)

    def _count(self, limit: CompiledLimit, key: Any, now: float) -> None:
        sessions = self._calls[limit.id]
        calls = sessions.get(key)
        if calls is None:
            calls = sessions[key] = deque()
            if len(sessions) > MAX_SESSIONS:
                sessions.popitem(last=False)
        sessions.move_to_end(key)
        calls.append(now)
