"""The Decision record and its why-trail, wire format ``refusalkit.decision/v1``
(docs/design/decision.md).

Pure data: no I/O, no clocks. ``to_dict`` gives the wire form in the documented key order;
``from_dict`` checks the schema string and rebuilds the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from refusalkit.errors import RequestError
from refusalkit.model._approval import Approval
from refusalkit.model._codes import Action, ReasonCode

__all__ = ["DECISION_SCHEMA", "Decision", "EngineRef", "PolicyRef", "Subject", "WhyStep"]

DECISION_SCHEMA = "refusalkit.decision/v1"


@dataclass(frozen=True, slots=True)
class WhyStep:
    """One considered rule or stage of a decision (docs/design/decision.md, WhyStep).

    ``value`` is already a redaction token unless the field's class is revealed. ``missing`` marks a
    condition on a field that was absent or of the wrong type (unknown, docs/design/policy.md).
    """

    rule: str
    effect: str
    matched: bool
    decisive: bool = False
    field: str | None = None
    field_class: str | None = None
    value: str | None = None
    test: str | None = None
    missing: bool = False
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Wire form; ``missing`` and ``detail`` only when set."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "effect": self.effect,
            "matched": self.matched,
            "decisive": self.decisive,
            "field": self.field,
            "field_class": self.field_class,
            "value": self.value,
            "test": self.test,
        }
        if self.missing:
            out["missing"] = True
        if self.detail is not None:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WhyStep:
        """Rebuild a step from its wire form."""
        return cls(
            rule=str(data["rule"]),
            effect=str(data["effect"]),
            matched=bool(data["matched"]),
            decisive=bool(data.get("decisive", False)),
            field=data.get("field"),
            field_class=data.get("field_class"),
            value=data.get("value"),
            test=data.get("test"),
            missing=bool(data.get("missing", False)),
            detail=data.get("detail"),
        )


@dataclass(frozen=True, slots=True)
class PolicyRef:
    """Which pack decided: its id, the author's version label, the digest of its canonical form."""

    id: str
    version: str
    digest: str

    def to_dict(self) -> dict[str, str]:
        """Wire form."""
        return {"id": self.id, "version": self.version, "digest": self.digest}


@dataclass(frozen=True, slots=True)
class EngineRef:
    """Which engine decided."""

    name: str
    version: str

    def to_dict(self) -> dict[str, str]:
        """Wire form."""
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True, slots=True)
class Subject:
    """Who asked: the agent and its session, as the caller named them (either may be unknown)."""

    agent: str | None = None
    session: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """Wire form."""
        return {"agent": self.agent, "session": self.session}


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision on one request (docs/design/decision.md). ``retryable`` is derived from the
    reason code.

    ``reason_codes_version`` is the registry version the code is read in. Left out (0), it is
    derived from the code: 1 unless the code was added later (``ReasonCode.since``); a record
    read from the wire keeps the version it states, which may not be older than its code's.
    ``approval`` is set on a decision of a ``require-approval`` rule (docs/design/approvals.md).
    ``client_request_id`` is set by the service on a decision it made for a client that sent a
    request id: the binding of that id to the request (docs/design/client.md, Answers bound to
    requests); absent otherwise, and on every decision journaled before it existed.
    """

    decision_id: str
    action: Action
    reason_code: ReasonCode | None
    matched_rule: str
    message: str | None
    why_trail: tuple[WhyStep, ...]
    policy: PolicyRef
    engine: EngineRef
    subject: Subject
    request_digest: str
    decided_at: str
    reason_codes_version: int = 0
    schema: str = field(default=DECISION_SCHEMA)
    approval: Approval | None = None
    client_request_id: str | None = None

    def __post_init__(self) -> None:
        if self.reason_codes_version == 0:
            since = self.reason_code.since if self.reason_code is not None else 1
            object.__setattr__(self, "reason_codes_version", since)
        if self.action.refuses and self.reason_code is None:
            raise ValueError(f"a {self.action} decision needs a reason code")
        if not self.action.refuses and self.reason_code is not None:
            raise ValueError(f"an {self.action} decision carries no reason code")
        if self.reason_code is not None and self.reason_code.since > self.reason_codes_version:
            raise ValueError(
                f"{self.reason_code} is a version {self.reason_code.since} reason code; "
                f"reason_codes_version is {self.reason_codes_version}"
            )

    @property
    def retryable(self) -> bool:
        """Derived from the reason code (docs/design/decision.md); never set by hand."""
        return self.reason_code.retryable if self.reason_code is not None else False

    def to_dict(self) -> dict[str, Any]:
        """Wire form, keys in the documented order; ``approval`` and ``client_request_id`` only
        when set."""
        out: dict[str, Any] = {
            "schema": self.schema,
            "decision_id": self.decision_id,
            "action": self.action.value,
            "reason_code": self.reason_code.value if self.reason_code is not None else None,
            "reason_codes_version": self.reason_codes_version,
            "matched_rule": self.matched_rule,
            "message": self.message,
            "retryable": self.retryable,
            "why_trail": [step.to_dict() for step in self.why_trail],
            "policy": self.policy.to_dict(),
            "engine": self.engine.to_dict(),
            "subject": self.subject.to_dict(),
            "request_digest": self.request_digest,
            "decided_at": self.decided_at,
        }
        if self.approval is not None:
            out["approval"] = self.approval.to_dict()
        if self.client_request_id is not None:
            out["client_request_id"] = self.client_request_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """Rebuild a decision from its wire form; refuses another schema version."""
        if data.get("schema") != DECISION_SCHEMA:
            raise RequestError(
                f"not a {DECISION_SCHEMA} record (schema={data.get('schema')!r})",
                hint="Only refusalkit decision records can be read here.",
            )
        code = data.get("reason_code")
        subject = data.get("subject") or {}
        approval = data.get("approval")
        bound = data.get("client_request_id")
        return cls(
            decision_id=str(data["decision_id"]),
            action=Action(data["action"]),
            reason_code=ReasonCode(code) if code is not None else None,
            matched_rule=str(data["matched_rule"]),
            message=data.get("message"),
            why_trail=tuple(WhyStep.from_dict(s) for s in data.get("why_trail", ())),
            policy=PolicyRef(**data["policy"]),
            engine=EngineRef(**data["engine"]),
            subject=Subject(agent=subject.get("agent"), session=subject.get("session")),
            request_digest=str(data["request_digest"]),
            decided_at=str(data["decided_at"]),
            reason_codes_version=int(data.get("reason_codes_version", 1)),
            approval=Approval.from_dict(approval) if isinstance(approval, Mapping) else None,
            client_request_id=None if bound is None else str(bound),
        )
