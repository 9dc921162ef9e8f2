"""Building ``WhyStep`` and ``Decision`` records on the hot path (a declared speed twin).

The model's records are frozen dataclasses whose ``__init__`` sets each field through
``object.__setattr__`` and then validates. The built-in engine and the engine adapters fill the
slots directly instead: a ``Decision``, ``WhyStep`` or ``Subject`` is made as an instance of an
open twin class with the same slots (``_open_twin``), filled by plain attribute stores, and then
given the record's class by ``__class__`` assignment, which Python allows only between classes
of one layout. The result is an ordinary record, equal to one built by ``__init__``
(``tests/decide/test_records.py`` checks this). ``make_decision`` still holds a Decision's
invariants: it refuses a refusal without a reason code and an allow with one, and it derives
``reason_codes_version`` from the code (``ReasonCode.since``), so no caller can pass a wrong
one.
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


# the fields each builder below sets, by name: a model change fails here, at import
_setters(WhyStep, (
    "rule", "effect", "matched", "decisive", "field", "field_class", "value", "test", "missing",
    "detail",
))  # fmt: skip
_d_bound = _setters(Decision, (
    "decision_id", "action", "reason_code", "matched_rule", "message", "why_trail", "policy",
    "engine", "subject", "request_digest", "decided_at", "reason_codes_version", "schema",
    "approval", "client_request_id",
))[-1]  # fmt: skip


def _open_twin(cls: type) -> type:
    """A class with ``cls``'s slots and nothing else (Python lays slots out by name), so that
    an instance, filled by plain attribute stores (the interpreter's fastest way to set a slot,
    where a descriptor's ``__set__`` is a call), can become a ``cls`` by ``__class__``
    assignment. Python refuses that assignment between classes whose layouts differ; it is
    tried once here, so a model change that breaks it fails at import, not in a decision."""
    if cls.__bases__ != (object,):  # pragma: no cover (the model changed: update here)
        raise RuntimeError(f"{cls.__name__} has bases {cls.__bases__}, expected only object")
    twin = type(f"_Open{cls.__name__}", (), {"__slots__": vars(cls)["__slots__"]})
    probe = twin()
    probe.__class__ = cls
    return twin


_OpenStep, _OpenDecision, _OpenSubject = (_open_twin(c) for c in (WhyStep, Decision, Subject))
_setters(Subject, ("agent", "session"))


def make_subject(agent: str | None, session: str | None) -> Subject:
    """A ``Subject`` (same result as ``Subject(agent, session)``)."""
    subject: Any = _OpenSubject()
    subject.agent = agent
    subject.session = session
    subject.__class__ = Subject
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
    step: Any = _OpenStep()
    step.rule = rule
    step.effect = effect
    step.matched = matched
    step.decisive = decisive
    step.field = field
    step.field_class = field_class
    step.value = value
    step.test = test
    step.missing = missing
    step.detail = detail
    step.__class__ = WhyStep
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
    out: Any = _OpenDecision()
    out.decision_id = decision_id
    out.action = action
    out.reason_code = reason_code
    out.matched_rule = matched_rule
    out.message = message
    out.why_trail = why_trail
    out.policy = policy
    out.engine = engine
    out.subject = subject
    out.request_digest = request_digest
    out.decided_at = decided_at
    out.reason_codes_version = _VERSION[reason_code]
    out.schema = DECISION_SCHEMA
    out.approval = approval
    out.client_request_id = None
    out.__class__ = Decision
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
    if value is None or value.isascii():  # ASCII always encodes: no encoding to try
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
        cache = self._cache
        subject = cache.get(key)
        if subject is None:  # a new pair (a new session, say): made, then remembered
            subject = cache.put(key, make_subject(_encodable(key[0]), _encodable(key[1])))
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
