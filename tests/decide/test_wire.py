"""``DecisionEncoder`` gives exactly the RFC 8785 bytes of ``decision.to_dict()``."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionEncoder, DecisionPoint, load_pack
from refusalkit.examples import example_path
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
from support.decisions import decisions


def _reference(decision: Decision) -> bytes | type[Exception]:
    try:
        return canonical_json(decision.to_dict())
    except Exception as exc:
        return type(exc)


def _encodes_as_reference(decision: Decision) -> None:
    """A fresh encoder gives the reference's bytes for ``decision``, or the reference's error."""
    expected = _reference(decision)
    if isinstance(expected, bytes):
        assert DecisionEncoder().encode(decision) == expected
    else:
        with pytest.raises(expected):
            DecisionEncoder().encode(decision)


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
    _encodes_as_reference(odd)


@settings(max_examples=150)
@given(st.lists(decisions(), min_size=1, max_size=6), st.lists(st.integers(0, 5), max_size=30))
def test_one_encoder_over_repeated_decisions_gives_the_reference(
    decided: list[Decision], order: list[int]
) -> None:
    """Records seen once, twice (moved to the kept table) and more, in any order."""
    encoder = DecisionEncoder()
    for i in [*range(len(decided)), *order, *range(len(decided))]:
        decision = decided[i % len(decided)]
        expected = _reference(decision)
        if isinstance(expected, bytes):
            assert encoder.encode(decision) == expected


def _with_trail(*steps: WhyStep) -> Decision:
    return Decision(
        decision_id="d",
        action=Action.DENY,
        reason_code=ReasonCode.POLICY_DENIED,
        matched_rule="r",
        message=None,
        why_trail=steps,
        policy=PolicyRef("p", "v", "sha256:0"),
        engine=EngineRef("e", "1"),
        subject=Subject(None, None),
        request_digest="x",
        decided_at="t",
    )


def test_one_off_steps_leave_the_repeated_ones_kept() -> None:
    """A step new in every decision waits in the small table; the shared step stays kept."""
    encoder = DecisionEncoder()
    shared = WhyStep("scope", "deny", matched=False, field="tool", value="fs.write")
    for i in range(3 * 4096):
        one_off = WhyStep("r", "deny", matched=True, decisive=True, field="p", value=f"v{i}")
        decision = _with_trail(shared, one_off)
        assert encoder.encode(decision) == canonical_json(decision.to_dict())
    kept = encoder._steps.kept  # the table under test
    assert kept.get(id(shared), (None,))[0] is shared
    assert len(kept) == 1


@pytest.mark.parametrize(("field", "value"), [("action", "deny"), ("reason_code", "policy-denied")])
def test_a_plain_string_for_an_enum_takes_the_reference_path(field: str, value: str) -> None:
    """The enums are written by orjson as their values; a plain string in their place (only a
    decision changed after it was made holds one) gets the reference's answer instead."""
    odd = _with_trail()
    object.__setattr__(odd, field, value)  # past the checks a Decision makes when built
    _encodes_as_reference(odd)
