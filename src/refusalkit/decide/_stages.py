"""Why-trail steps for the stages and for failures (docs/design/decision.md, WhyStep).

Stage steps have effect ``deny`` and ``matched: true`` when the stage refused. Their ``test``
says what was checked; ``detail`` says what went wrong, never with a request value in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from refusalkit.model import Action, ReasonCode, WhyStep

__all__ = [
    "MESSAGES",
    "failure_step",
    "format_args_path",
]

MESSAGES: dict[str, str] = {
    "@attestation": "The caller could not prove who it is; re-authenticate, then retry.",
    "@scope": "This agent is not granted this tool.",
    "@schema": "The tool's arguments do not match the schema the policy declares for it.",
    "@default": "No rule allows this request.",
    "@unavailable": "No clean verdict could be rendered, so the request was refused; retry later.",
    "@request": "The request is malformed; fix it before sending it again.",
    "filter": "The request's text was rejected by an input filter.",
    "rule": "A policy rule refused this request.",
    "approval": "This action needs a person's approval; ask an approver, then retry the same call.",
}

STAGE_CODES: dict[str, tuple[Action, ReasonCode]] = {
    "@attestation": (Action.DENY, ReasonCode.ATTESTATION_FAILED),
    "@scope": (Action.DENY, ReasonCode.OUT_OF_SCOPE),
    "@schema": (Action.DENY, ReasonCode.POLICY_DENIED),
    "@unavailable": (Action.DENY, ReasonCode.UNAVAILABLE),
    "@request": (Action.DENY, ReasonCode.INPUT_REJECTED),
}


def format_args_path(parts: Iterable[Any]) -> str:
    """A JSON Schema error path inside ``args`` as a dotted field path (``args.items[2].name``)."""
    out = "args"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def failure_step(problem: str, *, stage: str = "@unavailable") -> WhyStep:
    """The decisive step of a decision that failed closed (``@unavailable``) or whose request
    was malformed (``@request``)."""
    test = "a well-formed request" if stage == "@request" else "the decision point failed closed"
    return WhyStep(
        rule=stage,
        effect="deny",
        matched=True,
        decisive=True,
        test=test,
        detail=problem,
    )
