"""Property tests: random requests and random packs never raise out of ``decide``, never allow
what the pack's rules deny, and decisions round-trip through their canonical form."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode, canonical_json

KEYRING = Keyring.generate()
FIELDS = ["tool", "args.path", "args.n", "args.host", "caller.agent", "input", "args.deep.x"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from(
        ["fs.write", "fs.read", "/workspace/a", "/etc/passwd", "10.0.0.1", "coder", "", "é"]
    )
)
json_values = st.recursive(
    scalars | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=10,
)

conditions = st.one_of(
    scalars,
    st.builds(lambda g: {"glob": g}, st.sampled_from(["fs.*", "/workspace/**", "**/.env", "*"])),
    st.builds(lambda r: {"regex": r}, st.sampled_from(["a", "^/etc", "(?i)ignore", "[0-9]+"])),
    st.builds(lambda p: {"prefix": p}, st.sampled_from(["/", "/workspace/", "fs."])),
    st.builds(lambda v: {"in": v}, st.lists(scalars, min_size=1, max_size=3)),
    st.builds(lambda lo: {"range": {"min": lo, "max": lo + 2}}, st.integers(-3, 3)),
    st.builds(lambda c: {"cidr": c}, st.sampled_from(["10.0.0.0/8", "::1/128"])),
    st.builds(lambda p: {"not": {"prefix": p}}, st.sampled_from(["/", "/workspace/"])),
)
when = st.dictionaries(st.sampled_from(FIELDS), conditions, min_size=1, max_size=3)
rules = st.lists(
    st.fixed_dictionaries(
        {
            "effect": st.sampled_from(["allow", "audit", "deny", "block"]),
            "when": when | st.lists(when, min_size=1, max_size=2),
        }
    ),
    max_size=6,
)
requests = st.one_of(
    st.fixed_dictionaries(
        {"tool": st.sampled_from(["fs.write", "fs.read", "shell.run"])},
        optional={
            "args": st.dictionaries(st.sampled_from(["path", "n", "host", "deep"]), json_values),
            "caller": st.fixed_dictionaries({}, optional={"agent": scalars, "session": scalars}),
            "input": json_values,
        },
    ),
    json_values,
)


def build(raw_rules: list[dict[str, Any]], default: str) -> DecisionPoint:
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw_rules)]
    data = {"policy": "p", "version": "1", "default": default, "rules": numbered}
    return DecisionPoint(Pack.from_mapping(data), KEYRING)


def check_invariants(decision: Decision) -> None:
    assert decision.action.refuses == (decision.reason_code is not None)
    decisive = [s for s in decision.why_trail if s.decisive]
    assert len(decisive) == 1
    assert decisive[0].rule == decision.matched_rule
    wire = decision.to_dict()
    again = Decision.from_dict(json.loads(json.dumps(wire)))
    assert again == decision
    assert canonical_json(again.to_dict()) == canonical_json(wire)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.sampled_from(["allow", "deny"]), requests)
def test_random_packs_and_requests_never_raise(
    raw_rules: list[dict[str, Any]], default: str, request: Any
) -> None:
    decision = build(raw_rules, default).decide(request)
    check_invariants(decision)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(rules, requests)
def test_never_allow_when_a_rule_says_deny(raw_rules: list[dict[str, Any]], request: Any) -> None:
    """Adding a deny rule that matches everything must refuse whatever else the pack says."""
    dp = build([*raw_rules, {"effect": "deny"}], "allow")
    decision = dp.decide(request)
    assert decision.action in (Action.DENY, Action.BLOCK)
    if decision.reason_code is not ReasonCode.UNAVAILABLE:
        assert decision.reason_code is ReasonCode.POLICY_DENIED
    check_invariants(decision)


@settings(max_examples=100)
@given(st.text(max_size=60))
def test_random_lines_never_raise(line: str) -> None:
    decision = build([], "allow").decide_line(line, line_number=1)
    check_invariants(decision)
