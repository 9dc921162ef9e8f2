"""The Decision record: wire form, derived retryability, invariants and round trips."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.errors import RequestError
from refusalkit.model import (
    DECISION_SCHEMA,
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    format_timestamp,
    now_utc,
    uuid7,
)

KEY_ORDER = [
    "schema", "decision_id", "action", "reason_code", "reason_codes_version", "matched_rule",
    "message", "retryable", "why_trail", "policy", "engine", "subject", "request_digest",
    "decided_at",
]  # fmt: skip


def _decision(
    action: Action, code: ReasonCode | None, *, steps: tuple[WhyStep, ...] = ()
) -> Decision:
    return Decision(
        decision_id=uuid7(),
        action=action,
        reason_code=code,
        matched_rule="@default",
        message=None,
        why_trail=steps,
        policy=PolicyRef("p", "v1", "sha256:" + "0" * 64),
        engine=EngineRef("refusalkit", "0.1.0"),
        subject=Subject("coder", "s-1"),
        request_digest="hmac-sha256:k1:" + "a" * 64,
        decided_at=format_timestamp(now_utc()),
        reason_codes_version=code.since if code is not None else 1,
    )


def test_wire_form_has_documented_keys_in_order() -> None:
    wire = _decision(Action.DENY, ReasonCode.POLICY_DENIED).to_dict()
    assert list(wire) == KEY_ORDER
    assert wire["schema"] == DECISION_SCHEMA
    assert wire["reason_codes_version"] == 1


@pytest.mark.parametrize("code", list(ReasonCode))
def test_retryable_is_derived_from_the_code(code: ReasonCode) -> None:
    decision = _decision(Action.DENY, code)
    assert decision.retryable is code.retryable
    assert decision.to_dict()["retryable"] is code.retryable


@pytest.mark.parametrize("action", [Action.ALLOW, Action.AUDIT])
def test_proceeding_actions_carry_no_code(action: Action) -> None:
    assert _decision(action, None).to_dict()["reason_code"] is None
    with pytest.raises(ValueError, match="carries no reason code"):
        _decision(action, ReasonCode.POLICY_DENIED)


@pytest.mark.parametrize("action", [Action.DENY, Action.BLOCK])
def test_refusals_need_a_code(action: Action) -> None:
    with pytest.raises(ValueError, match="needs a reason code"):
        _decision(action, None)


steps = st.builds(
    WhyStep,
    rule=st.text(min_size=1, max_size=20),
    effect=st.sampled_from(["allow", "audit", "deny", "block"]),
    matched=st.booleans(),
    decisive=st.booleans(),
    field=st.none() | st.text(max_size=20),
    field_class=st.none() | st.text(max_size=20),
    value=st.none() | st.text(max_size=40),
    test=st.none() | st.text(max_size=40),
    missing=st.booleans(),
    detail=st.none() | st.text(max_size=40),
)


@given(
    st.sampled_from([(Action.ALLOW, None), (Action.AUDIT, None)])
    | st.tuples(st.sampled_from([Action.DENY, Action.BLOCK]), st.sampled_from(list(ReasonCode))),
    st.lists(steps, max_size=5),
)
def test_round_trip_through_json(
    pair: tuple[Action, ReasonCode | None], trail: list[WhyStep]
) -> None:
    original = _decision(pair[0], pair[1], steps=tuple(trail))
    again = Decision.from_dict(json.loads(json.dumps(original.to_dict())))
    assert again == original


def test_other_schema_is_refused() -> None:
    wire = _decision(Action.ALLOW, None).to_dict()
    wire["schema"] = "refusalkit.decision/v2"
    with pytest.raises(RequestError, match=r"not a refusalkit\.decision/v1 record"):
        Decision.from_dict(wire)


def test_uuid7_is_version_7_and_sorts_by_time() -> None:
    ids = [uuid7(unix_ms=ms) for ms in (1_000, 2_000, 3_000_000_000_000)]
    assert ids == sorted(ids)
    for value in ids:
        assert value[14] == "7"
        assert value[19] in "89ab"


def test_timestamp_is_rfc3339_utc_with_milliseconds() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", format_timestamp(now_utc()))
