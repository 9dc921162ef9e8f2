"""The turn runtime: wraps a responder, guards every turn, records every turn (docs/design/chat.md).

Per turn: ask the responder (or take a recorded articulation: the stub path), check the five
safety boundaries and the ethics commitments, select the surface (typed refusal > hedged
articulation > articulation), optionally re-articulate once after a refusal, emit a TurnEvent to
the turn log, the journal and (on refusal) the telemetry sinks, and remember whether the last
refusal was typed for ``no_silent_correction``. One runtime is one conversation; not thread-safe.

Nothing that leaves the runtime carries raw turn text unless ``record_text`` is set: turn events
hold keyed digests, verdict evidence and error messages are redacted, and ``ChatResponse.to_dict``
replaces every detected secret and personal-data span with its keyed token
(docs/design/decision.md).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from refusalkit.chat._attempt import (
    Attempt,
    combined_policy_ref,
    refusal_decision,
    unavailable_decision,
)
from refusalkit.chat._detect import find_private_data, looks_like_refusal
from refusalkit.chat._ethics import EthicsPack, check_ethics, load_ethics_pack_or_default
from refusalkit.chat._events import TurnEvent, TurnLog, text_digest
from refusalkit.chat._gitleaks import load_rules
from refusalkit.chat._responder import Message, Reply, Responder, as_reply
from refusalkit.chat._response import ChatResponse
from refusalkit.chat._safety import (
    DecisionMaker,
    HarmClassifier,
    SafetyContext,
    check_safety,
    decide_tool_calls,
    load_safety_pack,
)
from refusalkit.chat._scrub import Scrubber
from refusalkit.chat._surface import Identity, build_refusal, inject_hedge
from refusalkit.chat._telemetry import RefusalSink
from refusalkit.chat._untrusted import clean_text
from refusalkit.chat._verdict import (
    EthicsVerdict,
    LastRefusal,
    Memory,
    PredicateResult,
    SafetyVerdict,
    ToolCall,
    Turn,
)
from refusalkit.errors import ResponderError
from refusalkit.keyring import Keyring
from refusalkit.model import Decision, Subject, format_timestamp, now_utc, uuid7

__all__ = ["ChatRuntime", "JournalSink", "rearticulation_note"]

log = logging.getLogger("refusalkit.chat")


class JournalSink(Protocol):
    """What the runtime needs of a ``refusalkit.journal.Journal``."""

    def append(self, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append records durably; return their indices."""
        ...


def rearticulation_note(tags: Sequence[str]) -> str:
    """The system message that threads the violated ids into the retry request."""
    return (
        "Your previous draft was withheld because it violated: " + ", ".join(tags) + ". "
        "Answer the user's last message again without violating these boundaries."
    )


@dataclass(frozen=True, slots=True)
class _Pending:
    """The turn being guarded: its index, input, memory and path (responder or stub)."""

    index: int
    user_input: str
    memory: Memory
    path: str


@dataclass(frozen=True, slots=True)
class _Selection:
    final: Attempt
    surface: str
    selected: str
    why: str
    retry: dict[str, Any] | None


class ChatRuntime:
    """A guarded conversation. ``turn(text)`` asks the responder; ``check(text, reply)`` guards a
    recorded articulation (the stub path, used by replay)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        ethics_pack: EthicsPack | str | Path | None = None,
        keyring: Keyring | None = None,
        decision_point: DecisionMaker | None = None,
        harm_classifier: HarmClassifier | None = None,
        identity: Identity | None = None,
        turn_log: str | Path | None = None,
        journal: JournalSink | None = None,
        sinks: Sequence[RefusalSink] = (),
        session: str | None = None,
        agent: str | None = None,
        rearticulate: bool = False,
        record_text: bool = False,
        system_prompt: str | None = None,
        safety_pack_path: Path | None = None,
    ) -> None:
        self.safety_pack = load_safety_pack(safety_pack_path)  # fail closed: raises first
        load_rules()  # the pinned secret rules: compiled now, so a bad file stops the start
        self.ethics_pack = (
            ethics_pack
            if isinstance(ethics_pack, EthicsPack)
            else load_ethics_pack_or_default(ethics_pack)
        )
        self.responder = responder
        self.identity = identity or self.ethics_pack.identity
        self.keyring = keyring or Keyring.generate()
        self.redactor = self.keyring.redactor()
        self.scrubber = Scrubber(self.redactor, raw=record_text)
        self.decision_point = decision_point
        self.context = SafetyContext(harm_classifier)
        self.turn_log = TurnLog(turn_log) if turn_log is not None else None
        self.journal, self.sinks = journal, tuple(sinks)
        self.session = session or uuid7()
        self.agent = agent
        self.rearticulate, self.record_text = rearticulate, record_text
        self.policy = combined_policy_ref(self.safety_pack.ref, self.ethics_pack.ref)
        self.memory = Memory()
        self.history: list[dict[str, str]] = (
            [{"role": "system", "content": system_prompt}] if system_prompt else []
        )
        self._index = 0

    # -- the two paths ------------------------------------------------------------------------

    def turn(self, user_input: str) -> ChatResponse:
        """Ask the responder, guard its articulation, return what the user sees."""
        user_input = clean_text(user_input)
        pending = _Pending(self._index, user_input, self._memory_with(user_input), "responder")
        messages = [*self.history, {"role": "user", "content": user_input}]
        try:
            reply = self._ask(messages)
        except ResponderError as exc:
            self._record_error(pending, exc)
            raise
        first = self._attempt(pending, reply)
        return self._finish(pending, first, self._retry(pending, messages, first))

    def check(
        self, user_input: str, articulation: str, tool_calls: Sequence[ToolCall] = ()
    ) -> ChatResponse:
        """Guard a recorded articulation (no responder is asked): the stub path."""
        user_input = clean_text(user_input)
        pending = _Pending(self._index, user_input, self._memory_with(user_input), "stub")
        first = self._attempt(pending, as_reply(Reply(articulation, tuple(tool_calls))))
        return self._finish(pending, first, None)

    def refuse_unreadable(self, problem: str) -> ChatResponse:
        """A recorded turn that cannot be read (a transcript line that is not a turn): refused,
        fail closed, with the problem as the evidence; the session goes on."""
        pending = _Pending(self._index, "", self.memory, "stub")
        reason = f"the turn could not be read: {clean_text(problem)}"
        return self._finish(pending, self._unchecked_attempt(Reply("", ()), reason), None)

    # -- attempts -----------------------------------------------------------------------------

    def _ask(self, messages: Sequence[Message]) -> Reply:
        if self.responder is None:
            raise ResponderError(
                "this runtime has no responder",
                hint="Pass a responder, or use check() for recorded replies.",
            )
        try:
            return as_reply(self.responder(messages))
        except ResponderError as exc:
            message = self.scrubber.always(exc.message)
            if message == exc.message:
                raise
            raise ResponderError(message, hint=exc.hint) from exc
        except Exception as exc:  # any responder failure is a ResponderError, redacted
            message = self.scrubber.always(f"the responder raised {type(exc).__name__}: {exc}")
            raise ResponderError(message) from exc

    def _memory_with(self, user_input: str) -> Memory:
        found = {f"{f.kind}:{f.value}" for f in find_private_data(user_input)}
        return replace(self.memory, user_supplied=self.memory.user_supplied | found)

    def _attempt(self, pending: _Pending, reply: Reply) -> Attempt:
        """Guard one articulation; a turn that cannot be checked is refused (fail closed)."""
        try:
            return self._checked_attempt(pending, reply)
        except Exception as exc:  # noqa: BLE001 - no input may crash the guard
            log.warning("a turn could not be checked and was refused: %s", type(exc).__name__)
            return self._unchecked_attempt(
                reply, f"the turn could not be checked ({type(exc).__name__})"
            )

    def _unchecked_attempt(self, reply: Reply, reason: str) -> Attempt:
        error = {"error": reason}
        results = tuple(
            PredicateResult.checked(b, upheld=False, evidence=error)
            if b == "no_secret_disclosure"
            else PredicateResult.unchecked(b, {"reason": "the turn could not be checked"})
            for b in self.safety_pack.boundaries
        )
        safety = SafetyVerdict(self.safety_pack.ref, results)
        ethics = EthicsVerdict(self.ethics_pack.ref, ())
        hedge: dict[str, Any] = {"fired": [], "strength": None, "applied": False}
        refusal = build_refusal(safety, ethics)
        return Attempt(reply.text, reply.tool_calls, safety, ethics, refusal, reply.text, hedge)

    def _unavailable(self, call: ToolCall) -> Decision:
        subject = Subject(self.agent, self.session)
        return unavailable_decision(
            call, policy=self.policy, subject=subject, redactor=self.redactor
        )

    def _checked_attempt(self, pending: _Pending, reply: Reply) -> Attempt:
        turn = Turn(
            pending.index,
            pending.user_input,
            reply.text,
            reply.tool_calls,
            pending.memory,
            self.session,
            self.agent,
        )
        turn = decide_tool_calls(self.decision_point, turn, self._unavailable)
        safety = check_safety(self.safety_pack, turn, self.context)
        ethics = check_ethics(self.ethics_pack, turn)
        refusal = build_refusal(safety, ethics)
        candidate = reply.text
        hedge: dict[str, Any] = {"fired": list(ethics.hedging), "strength": None, "applied": False}
        if refusal is None and ethics.hedging and self.identity.hedge is not None:
            strength, text = self.identity.hedge
            candidate = inject_hedge(reply.text, text)
            hedge.update(strength=strength, applied=candidate != reply.text)
        return Attempt(
            reply.text,
            reply.tool_calls,
            safety,
            ethics,
            refusal,
            candidate,
            hedge,
            turn.tool_decisions or (),
        )

    def _retry(
        self, pending: _Pending, messages: list[dict[str, str]], first: Attempt
    ) -> Attempt | None:
        if first.refusal is None or not self.rearticulate:
            return None
        note = {"role": "system", "content": rearticulation_note(first.refusal.tags)}
        try:
            reply = self._ask([*messages, note])
        except ResponderError as exc:
            log.warning("re-articulation failed, the typed refusal stands: %s", exc.message)
            # (exc.message was redacted by _ask)
            return None
        return self._attempt(pending, reply)

    # -- selection and records ----------------------------------------------------------------

    def _select(self, first: Attempt, second: Attempt | None, path: str) -> _Selection:
        retry = self._retry_record(first, second, path)
        if second is not None and second.refusal is None:
            tags = ", ".join(first.refusal.tags) if first.refusal else ""
            why = f"re-articulated after {tags}; the retry upholds every boundary"
            return _Selection(second, second.candidate, "retry", why, retry)
        if first.refusal is not None:
            why = "violated: " + ", ".join(first.refusal.tags)
            return _Selection(first, first.refusal.text, "refusal", why, retry)
        if first.hedge["applied"]:
            why = f"{first.hedge['strength']} hedge for: " + ", ".join(first.hedge["fired"])
            return _Selection(first, first.candidate, "hedged", why, retry)
        return _Selection(first, first.candidate, "articulation", _plain_why(first), retry)

    def _retry_record(
        self, first: Attempt, second: Attempt | None, path: str
    ) -> dict[str, Any] | None:
        if first.refusal is None or not self.rearticulate:
            return None
        record: dict[str, Any] = {"attempted": second is not None, "why": list(first.refusal.tags)}
        if path == "stub":
            record["note"] = "stub path: no responder to ask again"
        if second is not None:
            record["surfaced"] = second.refusal is None
            record["retry_tags"] = list(second.refusal.tags) if second.refusal else []
            record["first_articulation"] = text_digest(first.articulation, self.redactor)
            record["retry_articulation"] = text_digest(second.articulation, self.redactor)
        return record

    def _finish(self, pending: _Pending, first: Attempt, second: Attempt | None) -> ChatResponse:
        index, user_input = pending.index, pending.user_input
        sel = self._select(first, second, pending.path)
        refusal = sel.final.refusal if sel.selected == "refusal" else None
        decision = None
        if refusal is not None:
            request = {  # texts enter the keyed digest as their SHA-256 (fast, same binding)
                "session": self.session,
                "turn": index,
                "input": _sha256(user_input),
                "articulation": _sha256(sel.final.articulation),
                "tool_calls": [c.to_dict() for c in sel.final.tool_calls],
            }
            decision = refusal_decision(
                sel.final,
                policy=self.policy,
                subject=Subject(self.agent, self.session),
                redactor=self.redactor,
                request=request,
            )
        event = self._event(pending, sel, decision)
        tool_decisions = [d for a in (first, second) if a is not None for d in a.tool_decisions]
        journal_index = self._record(event, [*tool_decisions, *([decision] if decision else [])])
        self._remember(pending, sel)
        attempts = (first,) if second is None else (first, second)
        return ChatResponse(
            index,
            self.session,
            sel.surface,
            sel.final.candidate,
            sel.final.articulation,
            sel.final.safety_verdict,
            sel.final.ethics_verdict,
            decision,
            sel.selected,
            sel.why,
            refusal.tags if refusal else (),
            bool(sel.final.hedge["applied"]),
            attempts,
            event,
            self.scrubber,
            journal_index,
        )

    def _remember(self, pending: _Pending, sel: _Selection) -> None:
        index, memory, user_input = pending.index, pending.memory, pending.user_input
        last = memory.last_refusal
        if sel.selected == "refusal":
            last = LastRefusal(index, typed=True)
        elif looks_like_refusal(sel.surface):  # defensive: no_silent_correction types these
            last = LastRefusal(index, typed=False)
        self.memory = replace(memory, last_refusal=last)
        self.history += [
            {"role": "user", "content": user_input},
            {"role": "assistant", "content": sel.surface},
        ]
        self._index = index + 1

    def _event(self, pending: _Pending, sel: _Selection, decision: Decision | None) -> TurnEvent:
        final = sel.final
        surfaces = {
            "input": pending.user_input,
            "surface": sel.surface,
            "walk_surface": final.candidate,
            "articulation_surface": final.articulation,
        }
        return TurnEvent(
            event_id=uuid7(),
            decided_at=format_timestamp(now_utc()),
            session=self.session,
            agent=self.agent,
            turn=pending.index,
            path=pending.path,
            selected=sel.selected,
            selected_why=sel.why,
            refusal_tags=final.refusal.tags if sel.selected == "refusal" and final.refusal else (),
            refusal_typed=sel.selected == "refusal",
            hedge=final.hedge,
            retry=sel.retry,
            safety_verdict=self.scrubber.value(final.safety_verdict.to_dict(), always=True),
            ethics_verdict=self.scrubber.value(final.ethics_verdict.to_dict(), always=True),
            surfaces={k: text_digest(v, self.redactor) for k, v in surfaces.items()},
            packs=self._packs(),
            decision_id=decision.decision_id if decision else None,
            text=surfaces if self.record_text else None,
        )

    def _packs(self) -> dict[str, Any]:
        return {"safety": self.safety_pack.ref.to_dict(), "ethics": self.ethics_pack.ref.to_dict()}

    def _record_error(self, pending: _Pending, exc: ResponderError) -> None:
        index, user_input = pending.index, pending.user_input
        event = TurnEvent(
            event_id=uuid7(),
            decided_at=format_timestamp(now_utc()),
            session=self.session,
            agent=self.agent,
            turn=index,
            path="responder",
            selected="error",
            selected_why="the responder failed; nothing was surfaced",
            refusal_tags=(),
            refusal_typed=False,
            hedge={"fired": [], "strength": None, "applied": False},
            retry=None,
            safety_verdict=None,
            ethics_verdict=None,
            surfaces={"input": text_digest(user_input, self.redactor)},
            packs=self._packs(),
            error={"type": type(exc).__name__, "message": self.scrubber.always(exc.message)},
            text={"input": user_input} if self.record_text else None,
        )
        self._record(event, ())
        self._index = index + 1

    def _record(self, event: TurnEvent, decisions: Sequence[Decision]) -> int | None:
        """Turn log, then journal (the turn's decisions, then its event), then sinks."""
        if self.turn_log is not None:
            self.turn_log.append(event)
        index = None
        if self.journal is not None:
            records = [d.to_dict() for d in decisions]
            index = self.journal.append([*records, event.to_dict()])[-1]
        if event.refused:
            self._notify(event)
        return index

    def _notify(self, event: TurnEvent) -> None:
        for sink in self.sinks:
            try:
                sink.refusal(event)
            except Exception:  # telemetry never breaks a turn
                log.warning("refusal sink %r failed", sink, exc_info=True)


def _sha256(text: str) -> str:
    """Binds a text inside the keyed request digest; never stored on its own."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain_why(attempt: Attempt) -> str:
    if attempt.hedge["fired"] and not attempt.hedge["applied"]:
        if attempt.hedge["strength"] is None:
            return "hedge commitments fired but no hedge is configured"
        return "hedge commitments fired; the articulation already opens with the hedge"
    return "every runtime-checkable boundary upheld"
