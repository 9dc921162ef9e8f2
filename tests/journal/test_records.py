"""Index columns of a record: the inlined ``index_fields`` equals a plain reading of its rules.

The reference below states the rules one field at a time (docs/design/decision.md decisions, a
nested ``decision`` as in a chat TurnEvent, the first string among the time keys); hypothesis draws
records with every field missing, a string, or some other JSON value.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.journal import decision_fields
from refusalkit.journal._records import FIELDS, _slow_fields, entry_fields, index_fields
from refusalkit.model import Decision, canonical_json
from support.decisions import decisions

_TIME_KEYS = ("decided_at", "at", "timestamp", "created_at", "finished_at", "started_at")


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def _first_time(record: Mapping[str, Any]) -> str | None:
    return next((record[k] for k in _TIME_KEYS if type(record.get(k)) is str), None)


def _reference(record: Mapping[str, Any]) -> tuple[str | None, ...]:
    inner = record.get("decision")
    if isinstance(inner, Mapping):
        subject = record.get("subject") or inner.get("subject")
        who = subject if isinstance(subject, Mapping) else record
        return (
            _text(record.get("schema")),
            *(_text(record.get(k)) or _text(inner.get(k)) for k in FIELDS[1:4]),
            _text(who.get("agent")),
            _text(who.get("session")),
            _first_time(record) or _first_time(inner),
        )
    subject = record.get("subject")
    who = subject if isinstance(subject, Mapping) else record
    return (
        *(_text(record.get(k)) for k in FIELDS[:4]),
        _text(who.get("agent")),
        _text(who.get("session")),
        _first_time(record),
    )


_value = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "deny"])
_keys = st.sampled_from([*FIELDS, *_TIME_KEYS, "agent", "session", "other"])
_flat = st.dictionaries(_keys, _value, max_size=8)
_with_subject = st.builds(lambda r, s: {**r, "subject": s}, _flat, _flat | _value | st.just({}))
_record = _with_subject | st.builds(
    lambda r, d: {**r, "decision": d}, _with_subject, _with_subject | _value
)


@settings(max_examples=200, deadline=None)
@given(_record)
def test_index_fields_follow_the_rules(record: dict[str, Any]) -> None:
    assert index_fields(record) == _reference(record)


def test_a_decision_gives_every_field(decision: Any) -> None:
    record = decision(61, action="deny", agent="coder")
    assert index_fields(record) == (
        "refusalkit.decision/v1",
        "deny",
        "policy-denied",
        "sensitive_path",
        "coder",
        "s-1",
        "2026-05-02T14:01:01.000Z",
    )


class _Kind(StrEnum):
    DENY = "deny"


_stored_value = _value | st.just(_Kind.DENY) | st.text(max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_keys, _stored_value, max_size=8).flatmap(
        lambda r: st.sampled_from(
            [r, {**r, "subject": r}, {**r, "decision": {**r, "subject": {"agent": "a"}}}]
        )
    )
)
def test_entry_bytes_give_the_columns_append_stored(record: dict[str, Any]) -> None:
    """What verify recomputes from the entry bytes equals what append indexed, on every path."""
    data = canonical_json(record)
    assert entry_fields(data) == index_fields(record)
    assert _slow_fields(data) == index_fields(record)  # without msgspec


def test_entry_bytes_that_are_no_object_give_no_columns() -> None:
    for data in (b"[1]", b"\xff\xfe", b"", b'"deny"', b"{"):
        assert entry_fields(data) is None
        assert _slow_fields(data) is None


@settings(max_examples=300, deadline=None)
@given(decisions())
def test_a_decisions_columns_equal_index_fields_of_its_wire_dict(decision: Decision) -> None:
    """``decision_fields`` reads the record itself (the service's hot path): same result."""
    assert decision_fields(decision) == index_fields(decision.to_dict())
