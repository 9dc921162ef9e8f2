"""What the journal indexes of each record, so that ``query`` and ``stats`` need no JSON parsing.

The entry bytes are the record's RFC 8785 form (docs/design/journal.md); these columns are a
convenience copy taken from the same record and are never hashed. Decisions
(docs/design/decision.md) give
every field;
other record kinds give what they have (a nested ``decision`` counts, as in a chat TurnEvent).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import orjson

from refusalkit.model import Decision

__all__ = ["FIELDS", "READ_KEYS", "EntryRow", "decision_fields", "entry_fields", "index_fields"]

FIELDS = ("schema", "action", "reason_code", "matched_rule", "agent", "session", "at")
_TIME_KEYS = ("decided_at", "at", "timestamp", "created_at", "finished_at", "started_at")
READ_KEYS = (
    *("schema", "action", "reason_code", "matched_rule", "subject", "decision"),
    *("agent", "session", *_TIME_KEYS),
)
"""Every top-level key ``index_fields`` reads (the others never change the columns)."""


EntryRow = tuple[Any, ...]
"""One entry ready to store: ``(data, leaf, *FIELDS)``, its RFC 8785 bytes, its leaf hash and its
index columns. A plain tuple, not a dataclass: appends build one per record (a frozen dataclass
costs ~0.4 µs each) and stores pass it to the database driver as it is."""


def _text(value: Any) -> str | None:
    """A string value as a plain ``str`` (a ``StrEnum`` is stored as its value, as its RFC 8785
    form is), anything else None: so the columns of a record and of its entry bytes agree."""
    if type(value) is str:
        return value
    return str.__str__(value) if isinstance(value, str) else None


def _first(record: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        found = _text(record.get(key))
        if found is not None:
            return found
    return None


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def index_fields(record: Mapping[str, Any]) -> tuple[str | None, ...]:
    """The ``FIELDS`` of a record, each a string or None (type checks inline: one call a record)."""
    get = record.get
    decision = get("decision")
    if decision is not None and _is_mapping(decision):
        return _nested_fields(record, decision)
    subject = get("subject")
    who = subject if _is_mapping(subject) else record
    schema, action, reason, rule = (
        get("schema"),
        get("action"),
        get("reason_code"),
        get("matched_rule"),
    )
    agent, session, at = who.get("agent"), who.get("session"), get("decided_at")
    return (
        schema if type(schema) is str else _text(schema),
        action if type(action) is str else _text(action),
        reason if type(reason) is str else _text(reason),
        rule if type(rule) is str else _text(rule),
        agent if type(agent) is str else _text(agent),
        session if type(session) is str else _text(session),
        at if type(at) is str else _first(record, _TIME_KEYS),
    )


def decision_fields(decision: Decision) -> tuple[str | None, ...]:
    """The ``FIELDS`` of a decision, read from the record itself: equal to
    ``index_fields(decision.to_dict())`` without building the dict (the service's hot path)."""
    code, subject = decision.reason_code, decision.subject
    return (
        _text(decision.schema),
        decision.action.value,
        None if code is None else code.value,
        _text(decision.matched_rule),
        _text(subject.agent),
        _text(subject.session),
        _text(decision.decided_at),
    )


def _nested_fields(record: Mapping[str, Any], inner: Mapping[str, Any]) -> tuple[str | None, ...]:
    """Fields of a record that wraps a decision (a chat TurnEvent, say)."""
    subject = record.get("subject") or inner.get("subject")
    who: Mapping[str, Any] = subject if isinstance(subject, Mapping) else record
    return (
        _text(record.get("schema")),
        _text(record.get("action")) or _text(inner.get("action")),
        _text(record.get("reason_code")) or _text(inner.get("reason_code")),
        _text(record.get("matched_rule")) or _text(inner.get("matched_rule")),
        _text(who.get("agent")),
        _text(who.get("session")),
        _first(record, _TIME_KEYS) or _first(inner, _TIME_KEYS),
    )


def _parse(data: bytes) -> Any:
    """The JSON value of ``data`` (orjson, or the standard library for what orjson refuses)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return None


def _slow_fields(data: bytes) -> tuple[str | None, ...] | None:
    record = _parse(data)
    return index_fields(record) if type(record) is dict else None


def _fast_decoder() -> Callable[[bytes], tuple[str | None, ...] | None] | None:
    """``entry_fields`` by msgspec, which skips the keys ``index_fields`` never reads instead of
    building them (~1.5x faster over a whole log); None when msgspec is not installed."""
    try:
        import msgspec  # noqa: PLC0415 (optional speed-up)
    except ImportError:
        return None
    read = msgspec.defstruct("Read", [(key, Any, None) for key in READ_KEYS], gc=False)
    decode, asdict = msgspec.json.Decoder(read).decode, msgspec.structs.asdict

    def fields(data: bytes) -> tuple[str | None, ...] | None:
        try:
            plain = asdict(decode(data))  # absent keys read as None, as index_fields treats them
        except msgspec.MsgspecError:
            return _slow_fields(data)
        return index_fields(plain)

    return fields


entry_fields: Callable[[bytes], tuple[str | None, ...] | None] = _fast_decoder() or _slow_fields
"""The ``FIELDS`` of stored entry bytes, by the same ``index_fields`` that append used; None
when the bytes are not a JSON object (so no stored columns can match them)."""
