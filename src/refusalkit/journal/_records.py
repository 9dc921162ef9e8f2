"""What the journal indexes of each record, so that ``query`` and ``stats`` need no JSON parsing.

The entry bytes are the record's RFC 8785 form (DESIGN.md §3); these columns are a convenience
copy taken from the same record and are never hashed. Decisions (DESIGN.md §1) give every field;
other record kinds give what they have (a nested ``decision`` counts, as in a chat TurnEvent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

__all__ = ["FIELDS", "EntryRow", "index_fields"]

FIELDS = ("schema", "action", "reason_code", "matched_rule", "agent", "session", "at")
_TIME_KEYS = ("decided_at", "at", "timestamp", "created_at", "finished_at", "started_at")


EntryRow = tuple[Any, ...]
"""One entry ready to store: ``(data, leaf, *FIELDS)``, its RFC 8785 bytes, its leaf hash and its
index columns. A plain tuple, not a dataclass: appends build one per record (a frozen dataclass
costs ~0.4 µs each) and stores pass it to the database driver as it is."""


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def _first(record: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        found = record.get(key)
        if type(found) is str:
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
        schema if type(schema) is str else None,
        action if type(action) is str else None,
        reason if type(reason) is str else None,
        rule if type(rule) is str else None,
        agent if type(agent) is str else None,
        session if type(session) is str else None,
        at if type(at) is str else _first(record, _TIME_KEYS),
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
