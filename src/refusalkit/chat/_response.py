"""``ChatResponse``: what one guarded turn produces (docs/design/chat.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from refusalkit.chat._attempt import Attempt
from refusalkit.chat._events import TurnEvent
from refusalkit.chat._scrub import Scrubber
from refusalkit.chat._verdict import EthicsVerdict, SafetyVerdict
from refusalkit.model import Decision

__all__ = ["CHAT_RESPONSE_SCHEMA", "ChatResponse"]

CHAT_RESPONSE_SCHEMA = "refusalkit.chat-response/v1"


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One turn: ``surface`` is what the user sees; ``articulation_surface`` what the responder
    said; ``walk_surface`` the candidate the guard walked (the articulation with any hedge), kept
    as evidence. Verdicts and fields are those of the selected attempt; ``attempts`` keeps every
    attempt (two when a re-articulation was tried)."""

    turn: int
    session: str
    surface: str
    walk_surface: str
    articulation_surface: str
    safety_verdict: SafetyVerdict
    ethics_verdict: EthicsVerdict
    decision: Decision | None
    selected: str
    selected_why: str
    refusal_tags: tuple[str, ...]
    hedge_applied: bool
    attempts: tuple[Attempt, ...]
    event: TurnEvent
    scrubber: Scrubber = field(repr=False, compare=False)
    journal_index: int | None = None

    @property
    def refused(self) -> bool:
        """Whether the user sees a typed refusal."""
        return self.selected == "refusal"

    def to_dict(self) -> dict[str, Any]:
        """Wire form (one line of ``refusalkit chat replay`` output), redacted."""
        scrub = self.scrubber
        return {
            "schema": CHAT_RESPONSE_SCHEMA,
            "turn": self.turn,
            "session": self.session,
            "surface": scrub.text(self.surface),
            "walk_surface": scrub.text(self.walk_surface),
            "articulation_surface": scrub.text(self.articulation_surface),
            "selected": self.selected,
            "selected_why": self.selected_why,
            "refusal_tags": list(self.refusal_tags),
            "hedge_applied": self.hedge_applied,
            "safety_verdict": scrub.value(self.safety_verdict.to_dict(), always=True),
            "ethics_verdict": scrub.value(self.ethics_verdict.to_dict(), always=True),
            "decision": self.decision.to_dict() if self.decision is not None else None,
            "attempts": [a.to_dict(scrub) for a in self.attempts] if len(self.attempts) > 1 else [],
            "event_id": self.event.event_id,
        }
