"""Where a client keeps the decisions it had to make itself (fail closed, service unreachable).

Optional: ``Client(..., fallback_journal=journal)``. The service's journal never saw these
decisions, so without a local journal they live only in the caller's hands; with one, an
examiner finds every refusal, the ones made while the service was down included. Appending is
best effort: the decision is already a refusal, so a journal that fails changes nothing but a log
line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from refusalkit.enforce import JournalWriter
from refusalkit.journal import Journal
from refusalkit.model import Decision

__all__ = ["Fallback"]

log = logging.getLogger("refusalkit.client")


class Fallback:
    """Journals locally made decisions, best effort."""

    __slots__ = ("_writer",)

    def __init__(self, journal: Journal | None) -> None:
        self._writer = JournalWriter(journal) if journal is not None else None

    def record(self, decisions: Sequence[Decision]) -> None:
        """Append ``decisions`` (no-op without a journal); never raises."""
        if self._writer is None or not decisions:
            return
        try:
            self._writer.append(decisions)
        except Exception as exc:  # noqa: BLE001 (the decisions already refuse; only logging is left)
            log.warning("fail-closed decisions not journaled: %s", type(exc).__name__)
