"""The directive: what an agent relying on its model's refusals should do.

See docs/design/provenance.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Directive", "DirectiveAction", "HaltReason"]


class DirectiveAction(StrEnum):
    """Go on, or stop and look."""

    PROCEED = "PROCEED"
    HALT = "HALT"


class HaltReason(StrEnum):
    """Why a directive says HALT."""

    NO_BASELINE = "no-baseline"
    STALE = "stale"
    DRIFTED = "drifted"
    INCONCLUSIVE = "inconclusive"
    RECEIPT_INVALID = "receipt-invalid"


@dataclass(frozen=True, slots=True)
class Directive:
    """PROCEED, or HALT with a reason code and a sentence saying why."""

    action: DirectiveAction
    reason: str
    code: HaltReason | None = None
    baseline_index: int | None = None

    @property
    def proceed(self) -> bool:
        """True when the directive is PROCEED."""
        return self.action is DirectiveAction.PROCEED

    @classmethod
    def go(cls, reason: str, *, baseline_index: int | None = None) -> Directive:
        """A PROCEED directive."""
        return cls(DirectiveAction.PROCEED, reason, None, baseline_index)

    @classmethod
    def halt(cls, code: HaltReason, reason: str, *, baseline_index: int | None = None) -> Directive:
        """A HALT directive."""
        return cls(DirectiveAction.HALT, reason, code, baseline_index)

    def line(self) -> str:
        """One line: ``PROCEED: ...`` or ``HALT (drifted): ...``."""
        code = f" ({self.code})" if self.code else ""
        return f"{self.action}{code}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {
            "action": str(self.action),
            "code": None if self.code is None else str(self.code),
            "reason": self.reason,
        }
