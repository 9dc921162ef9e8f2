"""The guard every integration shares: strict argument parsing and a request that never raises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import refusalkit
from refusalkit.enforce import ResultChecker
from refusalkit.errors import UsageError
from refusalkit.integrations import ToolGuard, json_args
from refusalkit.model import Action, Decision, ReasonCode
from support.live_service import tools_deployment

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


_KEY = "AKIAQ3EGRT5WZ7XK2LMN"


def _with_key(value: Any, path: list[int]) -> Any:
    """``value`` with the key put into one of its strings (or as the whole value)."""
    if isinstance(value, str):
        at = path[0] % (len(value) + 1) if path else 0
        return f"{value[:at]} {_KEY} {value[at:]}"
    if isinstance(value, list) and value:
        i = (path[0] if path else 0) % len(value)
        return [_with_key(v, path[1:]) if n == i else v for n, v in enumerate(value)]
    if isinstance(value, dict) and value:
        keys = list(value)
        k = keys[(path[0] if path else 0) % len(keys)]
        return {**value, k: _with_key(value[k], path[1:])}
    return [value, _KEY]


@given(json_values, st.lists(st.integers(min_value=0, max_value=50), max_size=6))
def test_a_key_anywhere_in_an_output_never_reaches_the_model(value: Any, path: list[int]) -> None:
    checker = ResultChecker.unjournaled()
    call = ToolGuard(_Recorder()).decide("fetch", {})
    output, refusal = checker.check("fetch", call, _with_key(value, path))
    assert refusal is None
    assert _KEY not in json.dumps(output)
    assert "[secret:aws_access_key_id <redacted:" in json.dumps(output)


def test_a_result_that_cannot_be_journaled_is_withheld(tmp_path: Path) -> None:
    deployment = tools_deployment(tmp_path)
    local = refusalkit.enforcer(
        policy=deployment.pack, journal=tmp_path / "j.db", keyring=deployment.keyring_path
    )
    guard = ToolGuard(local, lambda: {"agent": "coder", "session": "s-1"})
    call = guard.decide("read_file", {"path": "/a"})
    local.close()  # the journal is gone: the result's record cannot be written
    output, refusal = guard.output("read_file", call, f"key={_KEY}")
    assert output is None
    assert refusal is not None
    assert (refusal.action, refusal.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)


def test_approvals_need_a_local_enforcer() -> None:
    from refusalkit.integrations.openai_agents import RefusalApprovals  # noqa: PLC0415

    with pytest.raises(UsageError, match="local enforcer"):
        RefusalApprovals(_Recorder())  # type: ignore[arg-type]
    assert not ToolGuard(_Recorder()).approval("git.push", {}).required
