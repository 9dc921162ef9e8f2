"""``DecisionEncoder`` gives exactly the RFC 8785 bytes of ``decision.to_dict()``, and
``decision_fields`` exactly the journal's ``index_fields`` of it."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionEncoder, DecisionPoint, decision_fields, load_pack
from refusalkit.examples import example_path
from refusalkit.journal._records import index_fields
from refusalkit.keyring import Keyring
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    canonical_json,
)

texts = st.text(max_size=12)  # any code point, lone surrogates included
maybe_texts = st.none() | texts
step_values = st.none() | texts | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False)

steps = st.builds(
    WhyStep,
    rule=texts,
    effect=st.sampled_from(["allow", "deny", "block", "audit"]),
    matched=st.booleans(),
    decisive=st.booleans(),
    field=maybe_texts,
    field_class=maybe_texts,
    value=step_values,
    test=maybe_texts,
    missing=st.booleans(),
    detail=maybe_texts,
)


@st.composite
def decisions(draw: st.DrawFn) -> Decision:
    action = draw(st.sampled_from(list(Action)))
    code = draw(st.sampled_from(list(ReasonCode))) if action.refuses else None
    return Decision(
        decision_id=draw(texts),
        action=action,
        reason_code=code,
        matched_rule=draw(texts),
        message=draw(maybe_texts),
        why_trail=tuple(draw(st.lists(steps, max_size=4))),
        policy=PolicyRef(draw(texts), draw(texts), draw(texts)),
        engine=EngineRef(draw(texts), draw(texts)),
        subject=Subject(draw(maybe_texts), draw(maybe_texts)),
        request_digest=draw(texts),
        decided_at=draw(texts),
        reason_codes_version=draw(st.integers(0, 2**60)),
    )


def _reference(decision: Decision) -> bytes | type[Exception]:
    try:
        return canonical_json(decision.to_dict())
    except Exception as exc:
        return type(exc)


@settings(max_examples=300)
@given(decisions())
def test_bytes_equal_rfc8785_of_the_wire_dict(decision: Decision) -> None:
    expected = _reference(decision)
    encoder = DecisionEncoder()
    if isinstance(expected, bytes):
        assert encoder.encode(decision) == expected
        assert encoder.encode(decision) == expected  # again, from the caches
    else:
        with pytest.raises(Exception):  # noqa: B017 (the reference's own error type)
            encoder.encode(decision)


@settings(max_examples=300)
@given(decisions())
def test_index_columns_equal_index_fields_of_the_wire_dict(decision: Decision) -> None:
    assert decision_fields(decision) == index_fields(decision.to_dict())


def test_engine_decisions_encode_as_the_reference(keyring: Keyring) -> None:
    point = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring)
    encoder = DecisionEncoder()
    lines = example_path("requests.jsonl").read_bytes().splitlines()
    decided = [point.decide_line(line) for line in lines] * 2
    assert len({d.action for d in decided}) == len(Action)
    for decision in decided:
        assert encoder.encode(decision) == canonical_json(decision.to_dict())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decided_at", dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
        ("decision_id", 7),
        ("message", 1.5),
        ("matched_rule", None),
    ],
)
def test_an_unexpected_top_level_type_takes_the_reference_path(field: str, value: Any) -> None:
    """orjson would write a datetime or a float its own way; the reference decides instead."""
    base = Decision(
        decision_id="d",
        action=Action.ALLOW,
        reason_code=None,
        matched_rule="r",
        message=None,
        why_trail=(),
        policy=PolicyRef("p", "v", "sha256:0"),
        engine=EngineRef("e", "1"),
        subject=Subject(None, None),
        request_digest="x",
        decided_at="t",
    )
    odd = dataclasses.replace(base, **{field: value})
    expected = _reference(odd)
    if isinstance(expected, bytes):
        assert DecisionEncoder().encode(odd) == expected
    else:
        with pytest.raises(expected):
            DecisionEncoder().encode(odd)
