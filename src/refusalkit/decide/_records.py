"""Building ``WhyStep`` and ``Decision`` records on the hot path.

The model's records are frozen dataclasses whose ``__init__`` sets each field through
``object.__setattr__`` and then validates. The engine builds records whose invariants hold by
construction (a refusal always carries a reason code, an allow never does), so it fills the
slots directly: the result is an ordinary ``Decision``/``WhyStep``, equal to one built by
``__init__`` (``tests/decide/test_records.py`` checks this).
"""

from __future__ import annotations

from typing import Any

from refusalkit.model import (
    DECISION_SCHEMA,
    REASON_CODES_VERSION,
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
)

__all__ = ["make_decision", "make_step"]

_new = object.__new__
_set = object.__setattr__


def make_step(  # noqa: PLR0917 (mirrors WhyStep's positional fields)
    rule: str,
    effect: str,
    matched: bool,
    decisive: bool,
    field: str | None = None,
    field_class: str | None = None,
    value: str | None = None,
    test: str | None = None,
    missing: bool = False,
    detail: str | None = None,
) -> WhyStep:
    """A ``WhyStep`` with the given fields (same result as ``WhyStep(...)``)."""
    step: Any = _new(WhyStep)
    _set(step, "rule", rule)
    _set(step, "effect", effect)
    _set(step, "matched", matched)
    _set(step, "decisive", decisive)
    _set(step, "field", field)
    _set(step, "field_class", field_class)
    _set(step, "value", value)
    _set(step, "test", test)
    _set(step, "missing", missing)
    _set(step, "detail", detail)
    return step  # type: ignore[no-any-return]


def make_decision(  # noqa: PLR0917 (mirrors Decision's positional fields)
    decision_id: str,
    action: Action,
    reason_code: ReasonCode | None,
    matched_rule: str,
    message: str | None,
    why_trail: tuple[WhyStep, ...],
    policy: PolicyRef,
    engine: EngineRef,
    subject: Subject,
    request_digest: str,
    decided_at: str,
) -> Decision:
    """A ``Decision`` (same result as ``Decision(...)``; the engine guarantees its invariants)."""
    out: Any = _new(Decision)
    _set(out, "decision_id", decision_id)
    _set(out, "action", action)
    _set(out, "reason_code", reason_code)
    _set(out, "matched_rule", matched_rule)
    _set(out, "message", message)
    _set(out, "why_trail", why_trail)
    _set(out, "policy", policy)
    _set(out, "engine", engine)
    _set(out, "subject", subject)
    _set(out, "request_digest", request_digest)
    _set(out, "decided_at", decided_at)
    _set(out, "reason_codes_version", REASON_CODES_VERSION)
    _set(out, "schema", DECISION_SCHEMA)
    return out  # type: ignore[no-any-return]
