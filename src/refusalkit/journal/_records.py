"""What the journal indexes of each record, so that ``query`` and ``stats`` need no JSON parsing.

The entry bytes are the record's RFC 8785 form (DESIGN.md §3); these columns are a convenience
copy taken from the same record and are never hashed. Decisions (DESIGN.md §1) give every field;
other record kinds give what they have (a nested ``decision`` counts, as in a chat TurnEvent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FIELDS", "EntryRow", "index_fields"]

FIELDS = ("schema", "action", "reason_code", "matched_rule", "agent", "session", "at")
_TIME_KEYS = ("decided_at", "at", "timestamp", "created_at", "finished_at", "started_at")


@dataclass(frozen=True, slots=True)
class EntryRow:
    """One entry ready to store: its bytes, its leaf hash and its index columns (``FIELDS``)."""

    data: bytes
    leaf: bytes
    fields: tuple[str | None, ...]


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def _first(record: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        found = record.get(key)
        if type(found) is str:
            return found
    return None


def index_fields(record: Mapping[str, Any]) -> tuple[str | None, ...]:
    """The ``FIELDS`` of a record, each a string or None."""
    get = record.get
    decision = get("decision")
    if isinstance(decision, Mapping):
        return _nested_fields(record, decision)
    subject = get("subject")
    who = subject if isinstance(subject, Mapping) else record
    at = get("decided_at")
    return (
        _text(get("schema")),
        _text(get("action")),
        _text(get("reason_code")),
        _text(get("matched_rule")),
        _text(who.get("agent")),
        _text(who.get("session")),
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
