"""Where the service journaled each decision this client received (bounded memory)."""

from __future__ import annotations

from refusalkit.errors import UsageError
from refusalkit.model import Decision

__all__ = ["Indices"]

_LIMIT = 65536


class Indices:
    """``decision_id`` → journal index, for ``verify_inclusion``; the oldest half is dropped
    when full (a caller verifying an old decision passes its index explicitly)."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: dict[str, int] = {}

    def remember(self, decision: Decision, index: int | None) -> None:
        if index is None:
            return
        if len(self._map) >= _LIMIT:
            for key in list(self._map)[: _LIMIT // 2]:
                del self._map[key]
        self._map[decision.decision_id] = index

    def of(self, decision: Decision, index: int | None) -> int:
        """The index given, or the one remembered; ``UsageError`` when neither is known."""
        found = index if index is not None else self._map.get(decision.decision_id)
        if found is None:
            raise UsageError(
                f"the journal index of decision {decision.decision_id} is not known",
                hint="Pass index= (the service's Refusalkit-Journal-Index header).",
            )
        return found
