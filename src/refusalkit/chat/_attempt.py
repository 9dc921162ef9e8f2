"""One guarded attempt (an articulation and its verdicts) and the Decision of a refused turn.

docs/design/chat.md: a refused turn also yields a Decision (``deny``, ``policy-denied``,
``matched_rule`` = the first tagged id) with a why-trail of the violated predicates, so the same
journal queries and dashboards count chat refusals. Its policy reference names both packs: id and
version joined by ``+``, digest = SHA-256 of the RFC 8785 form of the two pack digests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from refusalkit._internal.failclosed import failed_decision
from refusalkit._version import __version__
from refusalkit.chat._safety import SAFETY_BOUNDARIES
from refusalkit.chat._scrub import Scrubber
from refusalkit.chat._surface import Refusal
from refusalkit.chat._verdict import EthicsVerdict, PredicateResult, SafetyVerdict, ToolCall
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    canonical_json,
    format_timestamp,
    now_utc,
    uuid7,
)
from refusalkit.redact import Redactor

__all__ = ["Attempt", "combined_policy_ref", "refusal_decision", "unavailable_decision"]

ENGINE = EngineRef("refusalkit.chat", __version__)

_FIELDS = {
    "no_unauthorized_action": "tool_calls",
    "no_silent_correction": "memory.last_refusal",
    "no_harmful_compliance": "input",
}


@dataclass(frozen=True, slots=True)
class Attempt:
    """One responder articulation, guarded: its verdicts, its refusal (if any) and its candidate
    surface (the articulation with any hedge applied: the walk surface)."""

    articulation: str
    tool_calls: tuple[ToolCall, ...]
    safety_verdict: SafetyVerdict
    ethics_verdict: EthicsVerdict
    refusal: Refusal | None
    candidate: str
    hedge: dict[str, Any]
    tool_decisions: tuple[Decision, ...] = ()

    def to_dict(self, scrubber: Scrubber) -> dict[str, Any]:
        """Wire form: texts and tool-call arguments through ``scrubber`` (redacted unless the
        deployment records text), verdict evidence always redacted."""
        return {
            "articulation": scrubber.text(self.articulation),
            "tool_calls": [scrubber.value(c.to_dict()) for c in self.tool_calls],
            "safety_verdict": scrubber.value(self.safety_verdict.to_dict(), always=True),
            "ethics_verdict": scrubber.value(self.ethics_verdict.to_dict(), always=True),
            "refusal_tags": list(self.refusal.tags) if self.refusal else [],
            "walk_surface": scrubber.text(self.candidate),
            "hedge": self.hedge,
        }


def combined_policy_ref(safety: PolicyRef, ethics: PolicyRef) -> PolicyRef:
    """One PolicyRef naming the safety and the ethics pack together."""
    pair = canonical_json([safety.digest, ethics.digest])
    return PolicyRef(
        f"{safety.id}+{ethics.id}",
        f"{safety.version}+{ethics.version}",
        "sha256:" + hashlib.sha256(pair).hexdigest(),
    )


def _result(attempt: Attempt, tag: str) -> PredicateResult | None:
    kind, _, ident = tag.partition(":")
    verdict = attempt.safety_verdict if kind == "safety" else attempt.ethics_verdict
    return next((r for r in verdict.results if r.id == ident), None)


def _field(ident: str, result: PredicateResult | None) -> str:
    if ident == "no_silent_correction" and result and result.evidence.get("untyped_refusal"):
        return "articulation"  # this turn's own plain-words refusal
    return _FIELDS.get(ident, "articulation") if ident in SAFETY_BOUNDARIES else "articulation"


def _step(attempt: Attempt, tag: str, *, decisive: bool, scrubber: Scrubber) -> WhyStep:
    result = _result(attempt, tag)
    ident = tag.partition(":")[2]
    detail = None
    if result is not None:  # presentation only: compact JSON with sorted keys, redacted
        evidence = scrubber.value(dict(result.evidence), always=True)
        detail = json.dumps(evidence, sort_keys=True, separators=(",", ":"))
    return WhyStep(
        rule=tag,
        effect="deny",
        matched=True,
        decisive=decisive,
        field=_field(ident, result),
        test=f"predicate {ident}",
        detail=detail,
    )


def refusal_decision(
    attempt: Attempt,
    *,
    policy: PolicyRef,
    subject: Subject,
    redactor: Redactor,
    request: dict[str, Any],
) -> Decision:
    """The Decision of a typed refusal: deny, policy-denied, the first tag decisive."""
    if attempt.refusal is None:
        raise ValueError("only a refused attempt has a refusal decision")
    tags, scrubber = attempt.refusal.tags, Scrubber(redactor)
    steps = (_step(attempt, t, decisive=i == 0, scrubber=scrubber) for i, t in enumerate(tags))
    return Decision(
        decision_id=uuid7(),
        action=Action.DENY,
        reason_code=ReasonCode.POLICY_DENIED,
        matched_rule=tags[0],
        message=attempt.refusal.text,
        why_trail=tuple(steps),
        policy=policy,
        engine=ENGINE,
        subject=subject,
        request_digest=redactor.digest(canonical_json(request)),
        decided_at=format_timestamp(now_utc()),
    )


def unavailable_decision(
    call: ToolCall, *, policy: PolicyRef, subject: Subject, redactor: Redactor
) -> Decision:
    """The Decision of a tool call whose arguments cannot be checked: ``deny`` + ``unavailable``
    (fail closed, docs/design/chat.md), made by the guard without asking the decision point."""
    return failed_decision(
        field="tool_calls",
        test="the tool call's arguments could be checked",
        problem=call.problem,
        message="The tool call's arguments could not be checked, so it was refused.",
        policy=policy,
        engine=ENGINE,
        subject=subject,
        request_digest=redactor.digest(canonical_json(call.to_dict())),
    )
