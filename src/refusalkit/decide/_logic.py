"""The engine's three-valued logic and its severities, named (docs/policy.md, Rules).

A condition, a map of conditions (all of) and a rule (any of its maps) are each true, false or
unknown (Kleene's strong logic): a value missing, of the wrong type, or that its kind cannot
parse is unknown. An unknown ``deny`` or ``block`` rule counts as matched (fail closed); an
unknown ``allow`` or ``audit`` rule does not.
"""

from __future__ import annotations

from enum import Enum, IntEnum

__all__ = ["Severity", "Tri"]


class Tri(Enum):
    """True, false or unknown: the outcome of a condition, a branch or a rule.

    Members are singletons, compared with ``is`` only (``outcome is Tri.TRUE``), never ordered
    and never used as numbers: which alternative of a condition held is asked separately, when a
    trail names it (``Condition.which``, ``decide/_conditions.py``). The values are the words
    a trail's detail uses for an element's outcome (``[0] true, [1] unknown``).
    """

    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    # Identity hash (C) instead of ``Enum.__hash__`` (Python, hashes the name): an outcome is
    # part of the engine's step-cache keys, hashed on every decision. Consistent with equality,
    # which for enum members is identity.
    __hash__ = object.__hash__


class Severity(IntEnum):
    """How strongly a rule's effect decides: the highest matched severity wins, the first rule
    in file order among equals. ``AUDIT`` is the lowest, yet an allowed request that an audit
    rule matched is answered ``audit`` (allowed and recorded). ``REQUIRE_APPROVAL`` overrides
    allow and yields to deny and block: it refuses until a person approves the exact action."""

    AUDIT = 0
    ALLOW = 1
    REQUIRE_APPROVAL = 2
    DENY = 3
    BLOCK = 4

    @property
    def effect(self) -> str:
        """The effect as a pack writes it (``REQUIRE_APPROVAL`` → ``"require-approval"``)."""
        return self.name.lower().replace("_", "-")

    @classmethod
    def of(cls, effect: str) -> Severity:
        """The severity of a rule's ``effect`` (``"deny"`` → ``DENY``)."""
        return cls[effect.upper().replace("-", "_")]
