"""Budgets: a pack's ``limits`` refuse the call over a session's budget ``rate-limited``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide._limits import Limiter
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Decision


def _pack(*limits: dict[str, object], default: str = "allow") -> Pack:
    data = {"policy": "p", "version": "v1", "default": default, "limits": list(limits),
            "rules": [{"id": "no_rm", "effect": "deny", "when": {"tool": "s.rm"}}]}  # fmt: skip
    return Pack.from_mapping(data, "test")


def _call(point: DecisionPoint, tool: str, session: str | None = "s1") -> Decision:
    caller = {} if session is None else {"session": session}
    return point.decide({"tool": tool, "args": {}, "caller": caller})


def test_the_call_over_a_limit_is_rate_limited_by_the_limit() -> None:
    pack = _pack({"id": "writes", "per": "session", "tools": {"glob": "s.write*"}, "max_calls": 2})
    point = DecisionPoint(pack, Keyring.generate())
    first, second, third = (_call(point, "s.write") for _ in range(3))
    assert [d.action.value for d in (first, second, third)] == ["allow", "allow", "deny"]
    decision = third.to_dict()
    assert (decision["reason_code"], decision["matched_rule"]) == ("rate-limited", "writes")
    assert decision["reason_codes_version"] == 2
    assert decision["retryable"] is True
    assert decision["message"].endswith("No more calls in this session.")
    assert [s["rule"] for s in decision["why_trail"] if s["decisive"]] == ["writes"]
    assert _call(point, "s.read").action.value == "allow"
    assert _call(point, "s.write", "s2").action.value == "allow"


def test_refused_calls_do_not_spend_the_budget() -> None:
    point = DecisionPoint(
        _pack({"id": "all", "per": "session", "max_calls": 1}), Keyring.generate()
    )
    assert _call(point, "s.rm").matched_rule == "no_rm"
    assert _call(point, "s.read").action.value == "allow"
    assert _call(point, "s.read").matched_rule == "all"


def test_a_window_says_when_to_retry_and_frees_the_budget() -> None:
    now = [100.0]
    limit = _pack({"id": "w", "per": "session", "max_calls": 1, "window_s": 30}).compiled.limits
    limiter = Limiter(limit, clock=lambda: now[0])
    assert limiter.take("t", "s") is None
    now[0] = 110.0
    over = limiter.take("t", "s")
    assert over is not None
    assert over.retry_after_s == pytest.approx(20.0)
    assert over.message() == "The limit w is reached. Retry in 20 s."
    now[0] = 130.0
    assert limiter.take("t", "s") is None


@given(times=st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=40).map(sorted),
       max_calls=st.integers(1, 5), window=st.floats(0.5, 100))  # fmt: skip
def test_no_window_ever_holds_more_than_max_calls(
    times: list[float], max_calls: int, window: float
) -> None:
    """Property: the calls let through never number more than ``max_calls`` in any window."""
    now = [0.0]
    data = {"id": "w", "per": "session", "max_calls": max_calls, "window_s": window}
    limiter = Limiter(_pack(data).compiled.limits, clock=lambda: now[0])
    passed = []
    for at in times:
        now[0] = at
        if limiter.take("t", "s") is None:
            passed.append(at)
    for start in passed:
        assert sum(1 for t in passed if start <= t < start + window) <= max_calls


def test_a_limit_needs_a_positive_budget_and_per_session() -> None:
    with pytest.raises(PolicyError):
        _pack({"id": "x", "per": "session", "max_calls": 0})
    with pytest.raises(PolicyError):
        _pack({"id": "x", "per": "agent", "max_calls": 3})
