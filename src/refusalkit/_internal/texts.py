"""The words of the stages, written once (docs/design/decision.md, WhyStep; docs/design/policy.md).

The built-in engine, the engine adapters, the enforcer, the chat guard and the MCP gate all answer
a refusal of one stage with the same message, so a caller sees one text per stage whichever
engine decided. ``STAGE_CODES`` gives each stage that refuses on its own its action and code.
"""

from __future__ import annotations

from refusalkit.model import Action, ReasonCode

__all__ = [
    "BIG_INTEGER",
    "FAILED_CLOSED_TEST",
    "MESSAGES",
    "REQUEST_TEST",
    "STAGE_CODES",
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
}
"""The message of a decision by each stage (``filter``: any input filter, ``rule``: a rule
that gives none of its own)."""

STAGE_CODES: dict[str, tuple[Action, ReasonCode]] = {
    "@attestation": (Action.DENY, ReasonCode.ATTESTATION_FAILED),
    "@scope": (Action.DENY, ReasonCode.OUT_OF_SCOPE),
    "@schema": (Action.DENY, ReasonCode.POLICY_DENIED),
    "@unavailable": (Action.DENY, ReasonCode.UNAVAILABLE),
    "@request": (Action.DENY, ReasonCode.INPUT_REJECTED),
}

BIG_INTEGER = (
    "an integer beyond ±(2**53 - 1) cannot be recorded exactly (RFC 7493 §2.2); send it as a string"
)
"""Why a request holding an integer beyond I-JSON's exact range (RFC 7493 §2.2) is malformed:
RFC 8785 cannot write it (§3.2.2.3), so no decision could name the request's digest
(``@request``, alike in the library, CLI, service and every engine)."""

REQUEST_TEST = "a well-formed request"
"""The ``test`` of the ``@request`` step."""

FAILED_CLOSED_TEST = "the decision point failed closed"
"""The ``test`` of the built-in engine's ``@unavailable`` step."""
