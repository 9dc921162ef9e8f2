"""The trust rules of approvals, as pure functions over typed values (docs/design/approvals.md).

- ``answer_problem``: whether an approver may answer a request (never its own agent, never a
  lapsed or already answered request).
- ``resolve``: which grant, if any, a retried action may use, else why none: the newest answer
  for the same action digest decides; a grant is usable once, until it expires, and only for
  the digest it names (so not for other arguments, another agent or another pack).
- ``granted`` / ``still_required``: the decision that follows, with its ``@approval`` step.

Times are compared as the RFC 3339 text every record carries (UTC, milliseconds, ``Z``), which
sorts as time does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from refusalkit._internal.records import make_step
from refusalkit.approvals._records import Answer, AnswerKind
from refusalkit.model import Action, Approval, Decision, ReasonCode, uuid7

__all__ = [
    "Resolution",
    "answer_problem",
    "claim_of",
    "granted",
    "make_answer",
    "resolve",
    "still_required",
]

_STEP = "@approval"
_LIST = "Run `refusalkit approvals list STORE` to see the pending requests."


def claim_of(grant_index: int) -> str:
    """The one-time claim that using the grant at ``grant_index`` records."""
    return f"approval-grant:{grant_index}"


def _same_person(approver: str, agent: str | None) -> bool:
    return agent is not None and approver.strip().casefold() == agent.strip().casefold()


def answer_problem(
    request: Decision, approver: str, now: str, answered: tuple[int, Answer] | None
) -> tuple[str, str] | None:
    """Why ``approver`` may not answer ``request`` now and what to do, or None when they may."""
    approval = request.approval
    if approval is None or request.reason_code is not ReasonCode.APPROVAL_REQUIRED:
        return "that decision is not a request for approval", _LIST
    if not approver.strip():
        return "an answer must name its approver", "Pass --approver NAME."
    if _same_person(approver, request.subject.agent):
        return (
            f"{approver!r} is the agent that asked: an agent cannot approve its own request",
            "A person other than the agent must answer it.",
        )
    if answered is not None:
        index, answer = answered
        return (
            f"the request was already answered ({answer.kind}) at journal index {index}",
            "An answer stands; the agent may ask again, which makes a new request.",
        )
    if now > approval.expires_at:
        return (
            f"the request lapsed at {approval.expires_at}",
            "The agent must ask again (retry the call), which makes a new request.",
        )
    return None


def make_answer(
    kind: AnswerKind,
    request: Decision,
    request_index: int,
    approver: str,
    now: str,
    *,
    expires_at: str | None = None,
    reason: str | None = None,
) -> Answer:
    """The (unsigned) answer to a request that ``answer_problem`` allowed."""
    approval = request.approval
    if approval is None:  # pragma: no cover (answer_problem refused it)
        raise ValueError("not a request for approval")
    return Answer(
        kind=kind,
        answer_id=uuid7(),
        request_id=approval.request_id,
        request_index=request_index,
        action_digest=approval.action_digest,
        policy_digest=request.policy.digest,
        tool=_tool(request),
        rule=request.matched_rule,
        subject=request.subject,
        approver=approver.strip(),
        at=now,
        expires_at=expires_at if kind is AnswerKind.GRANT else None,
        reason=reason,
    )


def _tool(request: Decision) -> str:
    """The tool a request for approval names."""
    approval = request.approval
    return (approval.tool if approval is not None else None) or "?"


class Resolution(NamedTuple):
    """The grant a retry may use (its journal index and record), else why there is none."""

    grant: tuple[int, Answer] | None
    problem: str


def resolve(
    decision: Decision, answers: Sequence[tuple[int, Answer]], used: Mapping[str, int], now: str
) -> Resolution:
    """The grant ``decision``'s action may use, walking its answers newest first.

    ``answers`` are the verified answers for the decision's agent (any digest); ``used`` maps
    each claim already recorded to the entry that made it.
    """
    approval = decision.approval
    if approval is None:
        return Resolution(None, "the decision is not a request for approval")
    same = [a for a in answers if a[1].action_digest == approval.action_digest]
    problem = None
    for index, answer in sorted(same, key=lambda a: a[0], reverse=True):
        if answer.kind is AnswerKind.DENIAL:
            why = f": {answer.reason}" if answer.reason else ""
            problem = problem or f"refused by {answer.approver} at journal index {index}{why}"
            break
        user = used.get(claim_of(index))
        if user is not None:
            problem = problem or (
                f"the grant at journal index {index} was already used by the decision at "
                f"journal index {user}"
            )
        elif answer.expires_at is not None and now > answer.expires_at:
            problem = (
                problem or f"the grant at journal index {index} expired at {answer.expires_at}"
            )
        else:
            return Resolution((index, answer), "")
    return Resolution(None, problem or _new_request(decision, answers))


def _new_request(decision: Decision, answers: Sequence[tuple[int, Answer]]) -> str:
    """Why no answer names this digest: a grant for this rule and agent under another pack or
    for other arguments makes this a new request; otherwise no one has answered yet."""
    near = [
        a for a in answers if a[1].rule == decision.matched_rule and a[1].tool == _tool(decision)
    ]
    grants = [a for a in near if a[1].kind is AnswerKind.GRANT]
    if not grants:
        return "no approver has answered this action yet"
    index, grant = max(grants, key=lambda a: a[0])
    if grant.policy_digest != decision.policy.digest:
        return (
            f"the pack changed since the grant at journal index {index} "
            f"(given under {grant.policy_digest}): this is a new request"
        )
    return (
        f"the arguments differ from those granted at journal index {index}: this is a new request"
    )


def granted(decision: Decision, grant_index: int, grant: Answer) -> Decision:
    """``allow`` by the same rule, naming the grant it uses in an ``@approval`` step."""
    step = make_step(
        _STEP,
        "allow",
        matched=True,
        decisive=False,
        test=f"grant {grant.answer_id} at journal index {grant_index}",
        detail=(
            f"approved by {grant.approver} at {grant.at} for request {grant.request_id} "
            f"(journal index {grant.request_index}); valid until {grant.expires_at}; used once"
        ),
    )
    approval = Approval(
        request_id=grant.request_id,
        action_digest=grant.action_digest,
        expires_at=grant.expires_at or "",
        tool=grant.tool,
        grant_index=grant_index,
    )
    return replace(
        decision,
        action=Action.ALLOW,
        reason_code=None,
        reason_codes_version=1,
        message=f"Approved by {grant.approver}; the grant at journal index {grant_index} is used.",
        why_trail=(*decision.why_trail, step),
        approval=approval,
    )


def still_required(decision: Decision, problem: str) -> Decision:
    """The ``approval-required`` decision with an ``@approval`` step saying why no grant applies."""
    step = make_step(
        _STEP,
        "deny",
        matched=True,
        decisive=False,
        test="a valid, unused grant for this action digest",
        detail=problem,
    )
    return replace(decision, why_trail=(*decision.why_trail, step))
