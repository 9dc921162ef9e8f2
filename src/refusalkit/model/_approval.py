"""The ``approval`` object of a decision, and the action digest it binds (docs/design/approvals.md).

Pure data: no I/O, no clocks. A ``require-approval`` rule that decides a request gives a
``deny`` + ``approval-required`` decision carrying an ``Approval``: the id of the request an
approver answers, the SHA-256 of the exact action (``action_digest``), when the request lapses,
the tool, and the arguments as a trail shows them (redacted). An ``allow`` that used a grant
carries the same object with ``grant_index``, the journal index of the grant it consumed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from refusalkit.model._canonical import canonical_json

__all__ = ["DEFAULT_TTL_S", "Approval", "action_digest", "parse_duration"]

DEFAULT_TTL_S = 900
"""How long a request may be answered, and a grant used, when the rule names no ``ttl``."""
_DURATION = re.compile(r"^(\d{1,6})([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def parse_duration(text: Any) -> int | None:
    """Seconds of a duration written ``90s``, ``15m``, ``2h`` or ``7d`` (None when not one)."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    return seconds if seconds > 0 else None


def action_digest(tool: str, args: Mapping[str, Any], agent: str | None, pack: str) -> str:
    """``sha256:`` + hex SHA-256 of the RFC 8785 form of ``{tool, args, agent, pack}``.

    ``pack`` is the pack's digest (docs/design/policy.md, Digest): a grant given under one pack
    cannot be used under another, nor for other arguments or another agent.
    """
    body = canonical_json({"tool": tool, "args": dict(args), "agent": agent, "pack": pack})
    return "sha256:" + hashlib.sha256(body).hexdigest()


@dataclass(frozen=True, slots=True)
class Approval:
    """What binds an approval to one action (docs/design/decision.md, ``approval``)."""

    request_id: str
    action_digest: str
    expires_at: str
    tool: str | None = None
    args: Mapping[str, Any] | None = None
    grant_index: int | None = None
    seal: str | None = None  # the decision point's HMAC over what an approver is shown

    def __post_init__(self) -> None:
        if not _DIGEST.match(self.action_digest):
            raise ValueError(f"action_digest must be sha256:<64 hex>, not {self.action_digest!r}")
        if self.grant_index is not None and self.grant_index < 0:
            raise ValueError("grant_index must be a journal index (>= 0)")

    def to_dict(self) -> dict[str, Any]:
        """Wire form; ``tool``, ``args`` and ``grant_index`` only when set."""
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "action_digest": self.action_digest,
            "expires_at": self.expires_at,
        }
        if self.tool is not None:
            out["tool"] = self.tool
        if self.args is not None:
            out["args"] = dict(self.args)
        if self.grant_index is not None:
            out["grant_index"] = self.grant_index
        if self.seal is not None:
            out["seal"] = self.seal
        return out

    def sealed_body(self, agent: str | None, policy_digest: str) -> bytes:
        """The RFC 8785 bytes ``seal`` is the keyed HMAC-SHA256 of: everything an approver is
        shown and answers (docs/design/approvals.md, The request)."""
        shown = {k: v for k, v in self.to_dict().items() if k != "seal"}
        return canonical_json({**shown, "agent": agent, "policy": policy_digest})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Approval:
        """Rebuild from the wire form."""
        args = data.get("args")
        index = data.get("grant_index")
        return cls(
            request_id=str(data["request_id"]),
            action_digest=str(data["action_digest"]),
            expires_at=str(data["expires_at"]),
            tool=str(data["tool"]) if data.get("tool") is not None else None,
            args=dict(args) if isinstance(args, Mapping) else None,
            grant_index=int(index) if index is not None else None,
            seal=str(data["seal"]) if data.get("seal") is not None else None,
        )
