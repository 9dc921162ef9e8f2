"""Building ``WhyStep`` and ``Decision`` records on the hot path (a declared speed twin).

The model's records are frozen dataclasses whose ``__init__`` sets each field through
``object.__setattr__`` and then validates. The built-in engine and the engine adapters fill the
slots directly through their descriptors instead: the result is an ordinary
``Decision``/``WhyStep``, equal to one built by ``__init__`` (``tests/decide/test_records.py``
checks this). ``make_decision`` still holds a Decision's invariants: it refuses a refusal without
a reason code and an allow with one, and it derives ``reason_codes_version`` from the code
(``ReasonCode.since``), so no caller can pass a wrong one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from refusalkit._bounded import BoundedCache
from refusalkit.model import (
    DECISION_SCHEMA,
    Action,
    Approval,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
)

__all__ = [
    "Subjects",
    "bound_to",
    "checked_decision",
    "make_decision",
    "make_step",
    "make_subject",
]

_new = object.__new__
_REFUSES: dict[Action, bool] = {action: action.refuses for action in Action}
_VERSION: dict[ReasonCode | None, int] = {None: 1, **{code: code.since for code in ReasonCode}}


def _setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot descriptors' ``__set__`` of ``names``; refuses a class whose fields differ."""
    declared = tuple(f.name for f in fields(cls))
    if sorted(declared) != sorted(names):  # pragma: no cover (the model changed: update here)
        raise RuntimeError(f"{cls.__name__} fields are {declared}, expected {names}")
    return tuple(vars(cls)[name].__set__ for name in names)


(_s_rule, _s_effect, _s_matched, _s_decisive, _s_field, _s_class, _s_value, _s_test,
 _s_missing, _s_detail) = _setters(WhyStep, (
    "rule", "effect", "matched", "decisive", "field", "field_class", "value", "test", "missing",
    "detail",
))  # fmt: skip

(_d_id, _d_action, _d_code, _d_rule, _d_message, _d_trail, _d_policy, _d_engine, _d_subject,
 _d_digest, _d_at, _d_version, _d_schema, _d_approval, _d_bound) = _setters(Decision, (
    "decision_id", "action", "reason_code", "matched_rule", "message", "why_trail", "policy",
    "engine", "subject", "request_digest", "decided_at", "reason_codes_version", "schema",
    "approval", "client_request_id",
))  # fmt: skip


_sub_agent, _sub_session = _setters(Subject, ("agent", "session"))


def make_subject(agent: str | None, session: str | None) -> Subject:
    """A ``Subject`` (same result as ``Subject(agent, session)``)."""
    subject: Any = _new(Subject)
    _sub_agent(subject, agent)
    _sub_session(subject, session)
    return subject  # type: ignore[no-any-return]


def make_step(
    rule: str,
    effect: str,
    *,
    matched: bool,
    decisive: bool,
    field: str | None = None,
    field_class: str | None = None,
    value: str | None = None,
    test: str | None = None,
    missing: bool = False,
    detail: str | None = None,
) -> WhyStep:
    """A ``WhyStep`` with the given fields (same result as ``WhyStep(...)``); every field after
    ``effect`` is named, so no bare boolean is passed by position."""
    step: Any = _new(WhyStep)
    _s_rule(step, rule)
    _s_effect(step, effect)
    _s_matched(step, matched)
    _s_decisive(step, decisive)
    _s_field(step, field)
    _s_class(step, field_class)
    _s_value(step, value)
    _s_test(step, test)
    _s_missing(step, missing)
    _s_detail(step, detail)
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
    approval: Approval | None = None,
) -> Decision:
    """A ``Decision`` (same result as ``Decision(...)``, which derives ``reason_codes_version``
    from the code); ``ValueError`` for a refusal without a code or an allow with one."""
    if _REFUSES[action] is (reason_code is None):
        raise ValueError(f"a {action} decision with reason code {reason_code} is not valid")
    out: Any = _new(Decision)
    _d_id(out, decision_id)
    _d_action(out, action)
    _d_code(out, reason_code)
    _d_rule(out, matched_rule)
    _d_message(out, message)
    _d_trail(out, why_trail)
    _d_policy(out, policy)
    _d_engine(out, engine)
    _d_subject(out, subject)
    _d_digest(out, request_digest)
    _d_at(out, decided_at)
    _d_version(out, _VERSION[reason_code])
    _d_schema(out, DECISION_SCHEMA)
    _d_approval(out, approval)
    _d_bound(out, None)
    return out  # type: ignore[no-any-return]


_COPIED = tuple(
    (vars(Decision)[f.name].__get__, vars(Decision)[f.name].__set__)
    for f in fields(Decision)
    if f.name != "client_request_id"
)


def bound_to(decision: Decision, binding: str) -> Decision:
    """``decision`` with ``client_request_id`` set to ``binding`` (same result as
    ``dataclasses.replace``, without re-validating a record that is already valid)."""
    out: Any = _new(Decision)
    for get, put in _COPIED:
        put(out, get(decision))
    _d_bound(out, binding)
    return out  # type: ignore[no-any-return]


_SUBJECT_LIMIT = 4096


def _encodable(value: str | None) -> str | None:
    """A caller's agent or session id as a decision keeps it: only a ``str`` that UTF-8, and so
    RFC 8785, can encode (a lone surrogate would make the decision itself unjournalable); else
    unknown (None). Checked once per distinct id, when its ``Subject`` is made."""
    if value is None or value.isascii():  # ASCII always encodes: no bytes made for it
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


class Subjects:
    """The ``Subject`` of ``(caller.agent, caller.session)``, made once per distinct pair.

    A non-string id, or one UTF-8 cannot encode, is unknown (None). The cache is bounded
    (``BoundedCache``: emptied when full) and holds only complete, immutable values: safe between
    threads. The built-in engine and the engine adapters share this one definition.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: BoundedCache[tuple[str | None, str | None], Subject] = BoundedCache(
            _SUBJECT_LIMIT
        )

    def get(self, agent: Any, session: Any) -> Subject:
        """The subject of these ids (as the caller sent them: any JSON value)."""
        key = (agent if type(agent) is str else None, session if type(session) is str else None)
        subject = self._cache.get(key)
        if subject is None:
            subject = self._cache.put(key, make_subject(_encodable(key[0]), _encodable(key[1])))
        return subject


def checked_decision(  # noqa: PLR0917 (the deprecated refusalkit.decide.make_decision)
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
    reason_codes_version: int = 0,
) -> Decision:
    """What the deprecated ``refusalkit.decide.make_decision`` builds: ``Decision(...)``, every
    invariant checked (a stated ``reason_codes_version`` may not be older than the code's)."""
    return Decision(
        decision_id, action, reason_code, matched_rule, message, why_trail, policy, engine,
        subject, request_digest, decided_at, reason_codes_version,
    )  # fmt: skip
