"""Actions and the closed set of reason codes, registry version 2 (docs/design/decision.md).

The string values are wire identifiers: never change one; add a code only with a new
``REASON_CODES_VERSION``. Version 2 adds ``approval-required`` and ``rate-limited`` and changes
none of version 1. A record carries the lowest version that defines its code
(``ReasonCode.since``), so a record a version 1 reader understands still says version 1.
``tests/vectors/reason-codes-v1.json`` and ``reason-codes-v2.json`` pin them.
"""

from __future__ import annotations

import enum

__all__ = ["REASON_CODES_VERSION", "TYPED_REFUSAL_PREFIX", "Action", "ReasonCode"]

REASON_CODES_VERSION = 2

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
    """Why a request was refused; a user can act on each (docs/design/reason-codes.md)."""

    POLICY_DENIED = "policy-denied"
    OUT_OF_SCOPE = "out-of-scope"
    ATTESTATION_FAILED = "attestation-failed"
    INPUT_REJECTED = "input-rejected"
    UNAVAILABLE = "unavailable"
    APPROVAL_REQUIRED = "approval-required"
    RATE_LIMITED = "rate-limited"

    @property
    def since(self) -> int:
        """The registry version that added this code (1 or 2); a record carries it."""
        return _SINCE.get(self, 1)

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
    ReasonCode.APPROVAL_REQUIRED: (
        "the action needs a human's approval before it may run",
        True,
        "after approval",
        "ask an approver, then retry with the approval",
    ),
    ReasonCode.RATE_LIMITED: (
        "the caller has made too many such requests in the current window",
        True,
        "after the window",
        "slow down, then retry later",
    ),
}

_SINCE: dict[ReasonCode, int] = {ReasonCode.APPROVAL_REQUIRED: 2, ReasonCode.RATE_LIMITED: 2}
