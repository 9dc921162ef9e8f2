"""Where a client keeps the decisions it had to make itself (fail closed, service unreachable).

Optional: ``Client(..., fallback_journal=journal)``. The service's journal never saw these
decisions, so without a local journal they live only in the caller's hands; with one, an
examiner finds every refusal, the ones made while the service was down included. Appending is
best effort: the decision is already a refusal, so a journal that fails changes nothing but a log
line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from refusalkit.client._protocol import refusal_problem
from refusalkit.enforce import JournalWriter, fail_closed
from refusalkit.journal import Journal
from refusalkit.model import Decision

__all__ = ["Fallback"]

log = logging.getLogger("refusalkit.client")


class Fallback:
    """Makes the client's own fail-closed decisions and journals them, best effort."""

    __slots__ = ("_writer",)

    def __init__(self, journal: Journal | None) -> None:
        self._writer = JournalWriter(journal) if journal is not None else None

    def refuse(self, requests: Sequence[Mapping[str, Any]], exc: Exception) -> list[Decision]:
        """Fail-closed decisions on ``requests`` for ``exc``, recorded (best effort)."""
        problem = refusal_problem(exc)
        log.warning("%d decision(s) failed closed: %s", len(requests), problem)
        refused = [fail_closed(r, problem) for r in requests]
        self.record(refused)
        return refused

    def record(self, decisions: Sequence[Decision]) -> None:
        """Append ``decisions`` (no-op without a journal); never raises."""
        if self._writer is None or not decisions:
            return
        try:
            self._writer.append(decisions)
        except Exception as exc:  # noqa: BLE001 (the decisions already refuse; only logging is left)
            log.warning("fail-closed decisions not journaled: %s", type(exc).__name__)
