"""What this client knows of each decision it received: where the service journaled it and the
request it answers (bounded memory)."""

from __future__ import annotations

from refusalkit.errors import VerificationError
from refusalkit.model import Decision

__all__ = ["Indices"]

_LIMIT = 65536
_NOT_OURS = (
    "It is not the service's answer to this client's request (replayed or altered on the way):"
    " treat the request as refused."
)


class Indices:
    """``decision_id`` → (journal index, ``client_request_id``, ``request_digest``) of each answer
    this client accepted, for ``verify_inclusion``; the oldest half is dropped when full."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: dict[str, tuple[int | None, str | None, str]] = {}

    def remember(self, decision: Decision, index: int | None) -> None:
        """Keep what ``decision`` (an answer already checked against its request) says."""
        if len(self._map) >= _LIMIT:
            for key in list(self._map)[: _LIMIT // 2]:
                del self._map[key]
        bound = decision.client_request_id
        self._map[decision.decision_id] = (index, bound, decision.request_digest)

    def of(self, decision: Decision, index: int | None) -> int:
        """The journal index of ``decision`` (``index`` if given), once it is known to be this
        client's answer to its own request: the same request binding and request digest as the
        answer accepted. ``VerificationError`` otherwise (docs/design/client.md)."""
        known = self._map.get(decision.decision_id)
        if known is None:
            raise VerificationError(
                f"decision {decision.decision_id} is not an answer this client received",
                hint="Verify it with the client that asked for it (each remembers its last "
                f"{_LIMIT} answers), or offline with `refusalkit journal verify --receipt`.",
            )
        where, bound, digest = known
        if bound is None or decision.client_request_id != bound:
            raise VerificationError(
                f"decision {decision.decision_id} is not bound to a request this client sent",
                hint=_NOT_OURS,
            )
        if decision.request_digest != digest:
            raise VerificationError(
                f"decision {decision.decision_id} has another request digest than the answer"
                " this client received",
                hint=_NOT_OURS,
            )
        found = index if index is not None else where
        if found is None:
            raise VerificationError(
                f"the journal index of decision {decision.decision_id} is not known",
                hint="Pass index= (the service's Refusalkit-Journal-Index header).",
            )
        return found
