"""Turn events (``refusalkit.turn-event/v1``) and the JSONL turn log (docs/design/chat.md).

Every turn emits one event, the stub path (guarding a recorded articulation) and a failing
responder included: which surface was selected and why, the verdicts, the hedge, the refusal tags,
and keyed digests (HMAC-SHA256, docs/design/decision.md) of the input and the surfaces: a holder of
the transcript and the key can prove what was said, a reader of the log cannot test guesses of a
short input ("my PIN is 4821"). Raw text appears only when the deployment opts in (``record_text``).
The event's RFC 8785 form is what the journal stores.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refusalkit.redact import Redactor

__all__ = ["TURN_EVENT_SCHEMA", "TurnEvent", "TurnLog", "text_digest"]

TURN_EVENT_SCHEMA = "refusalkit.turn-event/v1"


def text_digest(text: str, redactor: Redactor) -> str:
    """``hmac-sha256:<key id>:<hex>`` of the UTF-8 text: keyed, so it correlates and proves
    without letting a reader test guesses (docs/design/decision.md)."""
    return redactor.digest(text.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One turn's record. ``selected`` is ``articulation``, ``hedged``, ``refusal``, ``retry`` or
    ``error``; ``path`` is ``responder`` or ``stub``."""

    event_id: str
    decided_at: str
    session: str
    agent: str | None
    turn: int
    path: str
    selected: str
    selected_why: str
    refusal_tags: tuple[str, ...]
    refusal_typed: bool
    hedge: Mapping[str, Any]
    retry: Mapping[str, Any] | None
    safety_verdict: Mapping[str, Any] | None
    ethics_verdict: Mapping[str, Any] | None
    surfaces: Mapping[str, str]
    packs: Mapping[str, Any]
    decision_id: str | None = None
    error: Mapping[str, str] | None = None
    text: Mapping[str, str] | None = None
    schema: str = field(default=TURN_EVENT_SCHEMA)

    @property
    def refused(self) -> bool:
        """Whether the turn surfaced a typed refusal."""
        return bool(self.refusal_tags) and self.selected == "refusal"

    def to_dict(self) -> dict[str, Any]:
        """Wire form (``text`` only when recorded)."""
        out: dict[str, Any] = {
            "schema": self.schema,
            "event_id": self.event_id,
            "decided_at": self.decided_at,
            "subject": {"agent": self.agent, "session": self.session},
            "turn": self.turn,
            "path": self.path,
            "selected": self.selected,
            "selected_why": self.selected_why,
            "refusal": {"tags": list(self.refusal_tags), "typed": self.refusal_typed},
            "hedge": dict(self.hedge),
            "retry": dict(self.retry) if self.retry is not None else None,
            "safety_verdict": self.safety_verdict,
            "ethics_verdict": self.ethics_verdict,
            "surfaces": dict(self.surfaces),
            "packs": dict(self.packs),
            "decision_id": self.decision_id,
            "error": dict(self.error) if self.error is not None else None,
        }
        if self.text is not None:
            out["text"] = dict(self.text)
        return out


class TurnLog:
    """An append-only JSONL file of turn events (one compact JSON object a line, flushed)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, event: TurnEvent) -> None:
        """Append one event."""
        line = json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"))
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
