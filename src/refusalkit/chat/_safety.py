"""The fixed safety pack: five boundaries, loaded fail-closed against a digest pinned in code.

docs/design/chat.md: the safety pack is never swappable; a missing, unreadable or altered pack file
stops the runtime from starting (``SafetyPackError``). The pack file names the boundaries; their
predicates live here, one function each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from refusalkit.chat._detect import find_private_data, find_secrets, looks_like_refusal
from refusalkit.chat._pinned import read_pinned
from refusalkit.chat._verdict import PredicateResult, SafetyVerdict, ToolCall, Turn
from refusalkit.errors import SafetyPackError
from refusalkit.model import Action, Decision, PolicyRef

__all__ = [
    "SAFETY_BOUNDARIES",
    "SAFETY_PACK_PATH",
    "SAFETY_PACK_SHA256",
    "DecisionMaker",
    "HarmClassifier",
    "SafetyPack",
    "check_safety",
    "decide_tool_calls",
    "load_safety_pack",
]

SAFETY_PACK_PATH = Path(__file__).resolve().parent / "packs" / "safety-v1.json"
SAFETY_PACK_SHA256 = "fffabe7946c9935653b0976ed9847905931c96b41fb975d79f2429ce34763e3c"
SAFETY_BOUNDARIES = (
    "no_secret_disclosure",
    "no_private_data_exposure",
    "no_unauthorized_action",
    "no_silent_correction",
    "no_harmful_compliance",
)

HarmClassifier = Callable[[str], bool]


class DecisionMaker(Protocol):
    """What the guard needs of a ``refusalkit.decide.DecisionPoint``: ``decide`` never raises."""

    def decide(self, request: Any) -> Decision:
        """Decide one request (docs/design/policy.md)."""
        ...


@dataclass(frozen=True, slots=True)
class SafetyPack:
    """The loaded safety pack: its reference (id, version, pinned digest) and boundary ids."""

    ref: PolicyRef
    boundaries: tuple[str, ...]


def load_safety_pack(path: Path | None = None) -> SafetyPack:
    """Load and verify the safety pack; any deviation from the pinned digest is fatal.

    ``path`` exists for integrity checks of a copy: whatever file is given must have the pinned
    SHA-256 digest, so the pack cannot be swapped.
    """
    source = path or SAFETY_PACK_PATH
    raw = read_pinned(source, SAFETY_PACK_SHA256, "the safety pack")
    digest = SAFETY_PACK_SHA256
    data = json.loads(raw)
    ids = tuple(b["id"] for b in data["boundaries"])
    if ids != SAFETY_BOUNDARIES:  # pragma: no cover - the digest pins the content
        raise SafetyPackError(f"the safety pack names boundaries {ids}, not {SAFETY_BOUNDARIES}")
    ref = PolicyRef(str(data["id"]), str(data["version"]), f"sha256:{digest}")
    return SafetyPack(ref, ids)


@dataclass(frozen=True, slots=True)
class SafetyContext:
    """What the boundaries may consult besides the turn (tool decisions come with the turn)."""

    harm_classifier: HarmClassifier | None = None


def _no_secret_disclosure(turn: Turn, _ctx: SafetyContext) -> PredicateResult:
    found = find_secrets(turn.articulation)
    evidence = {"findings": [f.to_dict() for f in found]}
    return PredicateResult.checked("no_secret_disclosure", not found, evidence)


def _no_private_data_exposure(turn: Turn, _ctx: SafetyContext) -> PredicateResult:
    supplied = turn.memory.user_supplied
    found = find_private_data(turn.articulation)
    exposed = [f for f in found if not _was_supplied(f.kind, f.value, supplied)]
    evidence = {
        "findings": [f.to_dict() for f in exposed],
        "user_supplied_echoes": len(found) - len(exposed),
    }
    return PredicateResult.checked("no_private_data_exposure", not exposed, evidence)


def _was_supplied(kind: str, value: str, supplied: frozenset[str]) -> bool:
    if f"{kind}:{value}" in supplied:
        return True
    if kind != "phone":
        return False
    # the same number with or without its country code
    phones = (s[6:] for s in supplied if s.startswith("phone:"))
    return any(
        min(len(p), len(value)) >= 7 and (p.endswith(value) or value.endswith(p)) for p in phones
    )


def _tool_request(call: ToolCall, turn: Turn) -> dict[str, Any]:
    caller = {"agent": turn.agent, "session": turn.session}
    return {"tool": call.tool, "args": dict(call.args), "caller": caller, "input": turn.input}


def decide_tool_calls(
    decision_point: DecisionMaker | None,
    turn: Turn,
    unavailable: Callable[[ToolCall], Decision] | None = None,
) -> Turn:
    """The turn with the decision point's Decision for each proposed tool call (fail closed: a
    decision point that raises, which its contract forbids, is recorded as an error). A call whose
    arguments cannot be checked is not asked about: ``unavailable(call)`` decides it."""
    if decision_point is None or not turn.tool_calls:
        return turn

    def one(call: ToolCall) -> Decision:
        if call.problem is not None and unavailable is not None:
            return unavailable(call)
        return decision_point.decide(_tool_request(call, turn))

    try:
        decisions = tuple(one(c) for c in turn.tool_calls)
    except Exception as exc:  # noqa: BLE001 - fail closed, although decide() never raises
        return replace(turn, tool_decision_error=f"decision point raised {type(exc).__name__}")
    return replace(turn, tool_decisions=decisions)


def _no_unauthorized_action(turn: Turn, _ctx: SafetyContext) -> PredicateResult:
    if turn.tool_decision_error is not None:
        evidence: dict[str, Any] = {"error": turn.tool_decision_error}
        return PredicateResult.checked("no_unauthorized_action", upheld=False, evidence=evidence)
    unchecked = [{"tool": c.tool, "problem": c.problem} for c in turn.tool_calls if c.problem]
    if unchecked and turn.tool_decisions is None:  # fail closed without a decision point too
        evidence = {"unavailable": unchecked, "tool_calls": len(turn.tool_calls)}
        return PredicateResult.checked("no_unauthorized_action", upheld=False, evidence=evidence)
    if not turn.tool_calls or turn.tool_decisions is None:
        why = "no tool call proposed" if not turn.tool_calls else "no decision point configured"
        evidence = {"reason": why, "tool_calls": len(turn.tool_calls)}
        return PredicateResult.unchecked("no_unauthorized_action", evidence)
    pairs = zip(turn.tool_calls, turn.tool_decisions, strict=True)
    upheld = all(d.action in (Action.ALLOW, Action.AUDIT) for d in turn.tool_decisions)
    evidence = {"decisions": [_decision_summary(c, d) for c, d in pairs]}
    return PredicateResult.checked("no_unauthorized_action", upheld, evidence)


def _decision_summary(call: ToolCall, decision: Decision) -> dict[str, Any]:
    code = decision.reason_code.value if decision.reason_code is not None else None
    return {
        "tool": call.tool,
        "decision_id": decision.decision_id,
        "action": decision.action.value,
        "reason_code": code,
        "matched_rule": decision.matched_rule,
    }


def _no_silent_correction(turn: Turn, _ctx: SafetyContext) -> PredicateResult:
    """Refusals are typed. Violated by an articulation that refuses in plain words (so that very
    turn surfaces as a typed refusal, and the user's next turn is not punished for it), and by a
    previous turn whose refusal was not typed (the runtime's memory)."""
    last = turn.memory.last_refusal
    previous = last if last is not None and last.turn == turn.index - 1 else None
    untyped = looks_like_refusal(turn.articulation)
    if previous is None and not untyped:
        evidence: dict[str, Any] = {"reason": "neither this turn nor the previous one refused"}
        return PredicateResult.unchecked("no_silent_correction", evidence)
    evidence = {"untyped_refusal": untyped}
    if previous is not None:
        evidence.update(previous_turn=previous.turn, previous_refusal_typed=previous.typed)
    upheld = not untyped and (previous is None or previous.typed)
    return PredicateResult.checked("no_silent_correction", upheld, evidence)


def _no_harmful_compliance(turn: Turn, ctx: SafetyContext) -> PredicateResult:
    if ctx.harm_classifier is None:
        evidence: dict[str, Any] = {"reason": "no harm classifier configured"}
        return PredicateResult.unchecked("no_harmful_compliance", evidence)
    try:
        flagged = bool(ctx.harm_classifier(turn.input))
    except Exception as exc:  # noqa: BLE001 - fail closed: a broken classifier is a violation
        evidence = {"error": f"harm classifier raised {type(exc).__name__}"}
        return PredicateResult.checked("no_harmful_compliance", upheld=False, evidence=evidence)
    complied = flagged and not looks_like_refusal(turn.articulation)
    evidence = {"input_flagged": flagged, "complied": complied}
    return PredicateResult.checked("no_harmful_compliance", not complied, evidence)


_PREDICATES: Mapping[str, Callable[[Turn, SafetyContext], PredicateResult]] = {
    "no_secret_disclosure": _no_secret_disclosure,
    "no_private_data_exposure": _no_private_data_exposure,
    "no_unauthorized_action": _no_unauthorized_action,
    "no_silent_correction": _no_silent_correction,
    "no_harmful_compliance": _no_harmful_compliance,
}


def _guarded(boundary: str, turn: Turn, ctx: SafetyContext) -> PredicateResult:
    """One boundary, fail closed: a predicate that raises is a violation, typed by its id."""
    try:
        return _PREDICATES[boundary](turn, ctx)
    except Exception as exc:  # noqa: BLE001 - fail closed on anything a hostile turn provokes
        evidence = {"error": f"the boundary could not be checked ({type(exc).__name__})"}
        return PredicateResult.checked(boundary, upheld=False, evidence=evidence)


def check_safety(pack: SafetyPack, turn: Turn, ctx: SafetyContext) -> SafetyVerdict:
    """Run the five boundaries on one turn, in pack order."""
    return SafetyVerdict(pack.ref, tuple(_guarded(b, turn, ctx) for b in pack.boundaries))
