"""Actions and the closed set of reason codes, version 1 (docs/design/decision.md).

The string values are wire identifiers: never change one; add a code only with a new
``REASON_CODES_VERSION``. ``tests/vectors/reason-codes-v1.json`` pins them.
"""

from __future__ import annotations

import enum

__all__ = ["REASON_CODES_VERSION", "TYPED_REFUSAL_PREFIX", "Action", "ReasonCode"]

REASON_CODES_VERSION = 1

TYPED_REFUSAL_PREFIX = "I cannot proceed \u2014 boundary violated: "
"""How a typed refusal begins (docs/design/chat.md, Typed refusal): the chat loop writes it and
the provenance ``typed-prefix`` judge reads it, so both take it from here."""


class Action(enum.StrEnum):
    """What the caller must do with the request (docs/design/decision.md)."""

    ALLOW = "allow"
    AUDIT = "audit"
    DENY = "deny"
    BLOCK = "block"

    @property
    def refuses(self) -> bool:
        """True for ``deny`` and ``block``: the request is refused."""
        return self in (Action.DENY, Action.BLOCK)


class ReasonCode(enum.StrEnum):
    """Why a request was refused; a user can act on each (docs/design/decision.md, version 1)."""

    POLICY_DENIED = "policy-denied"
    OUT_OF_SCOPE = "out-of-scope"
    ATTESTATION_FAILED = "attestation-failed"
    INPUT_REJECTED = "input-rejected"
    UNAVAILABLE = "unavailable"

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later (derived, never set by hand)."""
        return _TABLE[self][1]

    @property
    def meaning(self) -> str:
        """What the code says happened."""
        return _TABLE[self][0]

    @property
    def retry(self) -> str:
        """When a retry makes sense, in words."""
        return _TABLE[self][2]

    @property
    def hint(self) -> str:
        """What the caller should do."""
        return _TABLE[self][3]


_TABLE: dict[ReasonCode, tuple[str, bool, str, str]] = {
    ReasonCode.POLICY_DENIED: (
        "a rule explicitly forbade this action or these arguments",
        False,
        "no",
        "change the action or its arguments",
    ),
    ReasonCode.OUT_OF_SCOPE: (
        "the action is outside the capabilities granted to this agent",
        False,
        "no",
        "use another agent or escalate",
    ),
    ReasonCode.ATTESTATION_FAILED: (
        "the caller could not prove who it is",
        True,
        "after re-attesting",
        "re-authenticate, then retry",
    ),
    ReasonCode.INPUT_REJECTED: (
        "the request's own text tripped a content or safety filter",
        False,
        "no",
        "change the input",
    ),
    ReasonCode.UNAVAILABLE: (
        "no clean verdict could be rendered; the decision failed closed",
        True,
        "yes",
        "retry later; this is an incident, not a rule",
    ),
}
