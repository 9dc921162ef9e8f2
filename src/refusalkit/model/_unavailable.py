"""The one shape of a fail-closed Decision: ``deny`` + ``unavailable`` + an ``@unavailable`` step.

docs/design/decision.md (fail closed): whenever no clean verdict can be rendered (the decision
point, the journal or the caller's own input failed), the record is a denial whose single,
decisive ``@unavailable`` step says what was expected (``test``) and what failed (``problem``).
The enforcer, the chat guard and the MCP gate build it here, so the three cannot drift apart.
"""

from __future__ import annotations

from refusalkit.model._codes import Action, ReasonCode
from refusalkit.model._decision import Decision, EngineRef, PolicyRef, Subject, WhyStep
from refusalkit.model._ids import format_timestamp, now_utc, uuid7

__all__ = ["unavailable_decision"]

_RULE = "@unavailable"


def unavailable_decision(
    *,
    test: str,
    problem: str | None,
    message: str,
    policy: PolicyRef,
    engine: EngineRef,
    subject: Subject,
    request_digest: str,
    field: str | None = None,
) -> Decision:
    """A new ``deny`` + ``unavailable`` Decision, decided now, with one ``@unavailable`` step.

    ``problem`` names what failed, never a request value: it is kept in the record; ``field``
    names the request field at fault, if any.
    """
    step = WhyStep(
        rule=_RULE,
        effect="deny",
        matched=True,
        decisive=True,
        field=field,
        test=test,
        detail=problem,
    )
    return Decision(
        decision_id=uuid7(),
        action=Action.DENY,
        reason_code=ReasonCode.UNAVAILABLE,
        matched_rule=_RULE,
        message=message,
        why_trail=(step,),
        policy=policy,
        engine=engine,
        subject=subject,
        request_digest=request_digest,
        decided_at=format_timestamp(now_utc()),
    )
