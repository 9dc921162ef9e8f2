"""The guard every integration shares: strict argument parsing and a request that never raises."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.integrations import ToolGuard, json_args
from refusalkit.model import Action, Decision, ReasonCode

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_any_json_object_round_trips(args: dict[str, Any]) -> None:
    assert json_args(json.dumps(args)) == args


@given(st.text())
def test_any_text_is_an_object_or_a_clear_error(text: str) -> None:
    try:
        value = json_args(text)
    except (ValueError, TypeError):
        return
    assert isinstance(value, dict)


@given(st.text(), json_values, json_values)
def test_a_repeated_key_is_refused_at_any_depth(key: str, first: Any, second: Any) -> None:
    name = json.dumps(key)
    inner = f"{{{name}: {json.dumps(first)}, {name}: {json.dumps(second)}}}"
    with pytest.raises(ValueError, match="twice"):
        json_args(f'{{"outer": {inner}}}')


class _Recorder:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def decide(self, request: Any) -> Decision:
        self.requests.append(request)
        raise AssertionError("never reached in these tests")

    async def adecide(self, request: Any) -> Decision:
        return self.decide(request)


@pytest.mark.parametrize("args", [None, "text", [1, 2], 7])
def test_arguments_that_are_not_an_object_fail_closed_without_asking(args: Any) -> None:
    recorder = _Recorder()
    decision = ToolGuard(recorder).decide("read_file", args)
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
    assert recorder.requests == []


def test_to_request_maps_names_and_caller_is_added() -> None:
    guard = ToolGuard(
        _Recorder(),
        caller=lambda: {"agent": "coder", "token": "t"},
        to_request=lambda tool, args: {"tool": f"fs.{tool}", "args": dict(args)},
    )
    assert guard.request("read", {"path": "/a"}) == {
        "tool": "fs.read",
        "args": {"path": "/a"},
        "caller": {"agent": "coder", "token": "t"},
        "context": {"session": {"tainted": False, "taint": []}},
    }


class _Broken:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def decide(self, request: Any) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def adecide(self, request: Any) -> Any:
        return self.decide(request)


@pytest.mark.parametrize("answer", [RuntimeError("boom"), None, {"action": "allow"}])
def test_an_enforcer_that_raises_or_answers_nonsense_refuses(answer: Any) -> None:
    guard = ToolGuard(_Broken(answer))
    for decision in (guard.decide("t", {}), asyncio.run(guard.adecide("t", {}))):
        assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
        assert "the enforcer failed" in (decision.why_trail[-1].detail or "")
