"""Decision answers decoded fast: ``msgspec`` typed structs, nested records interned.

A batch answer holds up to a thousand decisions that share their policy, engine, subject and
most why-trail steps (the engine reuses them), so each distinct nested record is built once and
shared, as the engine itself does. The structs mirror ``refusalkit.decision/v1``
(docs/design/decision.md); an answer they do not fit is handed to the general path
(``Decision.from_dict``), which names what is wrong, so the fast path can only be faster, never
more lenient.
"""

from __future__ import annotations

from typing import Any

import msgspec

from refusalkit.model import (
    DECISION_SCHEMA,
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
)

__all__ = ["decode_batch", "decode_decision"]

_LIMIT = 4096
_ACTIONS = {a.value: a for a in Action}
_CODES: dict[str | None, ReasonCode | None] = {c.value: c for c in ReasonCode}
_CODES[None] = None


class _Step(msgspec.Struct, frozen=True):
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


class _Policy(msgspec.Struct, frozen=True):
    id: str
    version: str
    digest: str


class _Engine(msgspec.Struct, frozen=True):
    name: str
    version: str


class _Subject(msgspec.Struct, frozen=True):
    agent: str | None = None
    session: str | None = None


class _Decision(msgspec.Struct):
    schema: str
    decision_id: str
    action: str
    matched_rule: str
    why_trail: list[_Step]
    policy: _Policy
    engine: _Engine
    subject: _Subject
    request_digest: str
    decided_at: str
    reason_code: str | None = None
    reason_codes_version: int = 1
    message: str | None = None
    client_request_id: str | None = None
    approval: dict[str, Any] | None = None  # rare: declined, the general path reads it


class _Batch(msgspec.Struct):
    decisions: list[_Decision]
    indices: list[int | None] | None = None


class _Interned:
    """Each distinct nested record, built once (bounded, cleared when full)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[Any, Any] = {}

    def get(self, key: Any, make: Any) -> Any:
        found = self._seen.get(key)
        if found is None:
            if len(self._seen) >= _LIMIT:
                self._seen.clear()
            found = self._seen[key] = make(**msgspec.structs.asdict(key))
        return found


_one = msgspec.json.Decoder(_Decision)
_many = msgspec.json.Decoder(_Batch)
_interned = _Interned()


def _build(wire: _Decision) -> Decision:
    if wire.schema != DECISION_SCHEMA:
        raise ValueError(f"not a {DECISION_SCHEMA} record")
    if wire.approval is not None:
        raise ValueError("a decision with an approval takes the general path")
    get = _interned.get
    return Decision(
        wire.decision_id,
        _ACTIONS[wire.action],
        _CODES[wire.reason_code],
        wire.matched_rule,
        wire.message,
        tuple(get(step, WhyStep) for step in wire.why_trail),
        get(wire.policy, PolicyRef),
        get(wire.engine, EngineRef),
        get(wire.subject, Subject),
        wire.request_digest,
        wire.decided_at,
        wire.reason_codes_version,
        client_request_id=wire.client_request_id,
    )


def decode_decision(body: bytes) -> Decision:
    """One decision; raises (``msgspec`` or ``ValueError``/``KeyError``) when it does not fit."""
    return _build(_one.decode(body))


def decode_batch(body: bytes) -> tuple[list[Decision], list[int | None] | None]:
    """A batch answer's decisions and indices; raises when it does not fit."""
    batch = _many.decode(body)
    return [_build(d) for d in batch.decisions], batch.indices
