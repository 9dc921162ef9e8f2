"""Rules decided together by lookups (``FieldGroup``) decide exactly as rules checked one by one."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide import _compile as compile_module
from refusalkit.keyring import Keyring

KEYRING = Keyring.generate()
names = st.sampled_from([".env", "id_rsa", "a.py", "x", "main"])
dirs = st.sampled_from(["/etc", "/workspace", "/workspace/src", "/home/u/.ssh", ""])
path_tests = (  # the conditions on a path that a field group indexes
    st.builds(lambda n: {"glob": f"**/{n}"}, names),
    st.builds(lambda d: {"glob": f"{d}/**"}, dirs),
    st.builds(lambda d, n: {"glob": f"{d}/{n}"}, dirs, names),
    st.builds(lambda d: {"prefix": f"{d}/"}, dirs),
    st.builds(lambda vs: {"in": vs}, st.lists(names, min_size=1, max_size=3)),
    st.builds(lambda a, b: {"glob": [f"**/{a}", f"{b}/**"]}, names, dirs),
    st.builds(lambda n: {"regex": re.escape(n)}, names),  # a literal regex: a substring test
)
indexable = st.one_of(
    *path_tests,
    names,
    st.builds(lambda d, n: {"regex": [re.escape(d), f"{n}$"]}, dirs, names),  # not indexable
    st.just({"regex": ""}),
)
rules = st.lists(
    st.fixed_dictionaries(
        {
            "effect": st.sampled_from(["allow", "audit", "deny", "block"]),
            "when": st.fixed_dictionaries(
                {"tool": st.sampled_from(["fs.write", "fs.read"]), "args.path": indexable}
            ),
        }
    ),
    min_size=1,
    max_size=8,
)
paths = st.one_of(
    st.builds(lambda d, n: f"{d}/{n}", dirs, names),
    st.builds(lambda d, m, n: f"{d}/{m}/{n}", dirs, names, names),
    names,
    st.integers(0, 3),
    st.none(),
)


def _beside(data: dict[str, Any], name: str, stand_in: Any) -> tuple[DecisionPoint, DecisionPoint]:
    """The pack's decision point, and one whose plans were made (for the tools these tests
    call) with the compiler's ``name`` replaced by ``stand_in``."""
    slow_machine = 10_000.0  # ms: no decision here may fail closed for want of time
    usual = DecisionPoint(Pack.from_mapping(data), KEYRING, deadline_ms=slow_machine)
    original = getattr(compile_module, name)
    setattr(compile_module, name, stand_in)
    try:
        other = DecisionPoint(Pack.from_mapping(data), KEYRING, deadline_ms=slow_machine)
        for tool in ("fs.write", "fs.read"):  # plans are made on first use: make them now
            other.pack.compiled.rules.for_tool(tool)
    finally:
        setattr(compile_module, name, original)
    return usual, other


def decision_points(raw: list[dict[str, Any]]) -> tuple[DecisionPoint, DecisionPoint]:
    """The pack's decision point, and one whose rules are all checked one by one."""
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw)]
    data = {"policy": "p", "version": "1", "default": "allow", "rules": numbered}
    return _beside(data, "_groupable", lambda rule: None)  # every rule checked one by one


def decide_both(raw: list[dict[str, Any]], request: dict[str, Any]) -> tuple[Any, Any]:
    grouped, single = decision_points(raw)
    return grouped.decide(request), single.decide(request)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.sampled_from(["fs.write", "fs.read"]), paths | st.just("absent"))
def test_grouped_rules_decide_like_single_rules(
    raw: list[dict[str, Any]], tool: str, path: Any
) -> None:
    request: dict[str, Any] = {"tool": tool, "args": {} if path == "absent" else {"path": path}}
    grouped, single = decide_both(raw, request)
    assert grouped.to_dict()["why_trail"] == single.to_dict()["why_trail"]
    assert (grouped.action, grouped.reason_code, grouped.matched_rule) == (
        single.action,
        single.reason_code,
        single.matched_rule,
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/workspace/src/.env", {0: 0, 1: 0}),
        ("/workspace/src/a.py", {1: 0}),
        (".env", {0: 0}),
        ("/etc/passwd", {2: 1}),
    ],
)
def test_field_group_lookups(path: str, expected: dict[int, int]) -> None:
    group = compile_module.FieldGroup(("args", "path"))
    specs = [
        ({"glob": "**/.env"}, 0),
        ({"glob": "/workspace/**"}, 1),
        ({"glob": ["/opt/x", "/etc/**"]}, 2),
    ]
    for raw, position in specs:
        spec = compile_module._Compiler({"rules": []}, compile_module.Lines("t")).spec(
            "args.path", raw, ()
        )
        assert spec.cond.index is not None
        group.add(position, spec, spec.cond.index)
    assert group.match(path) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.lists(st.tuples(st.sampled_from(["fs.write", "fs.read"]), paths), max_size=12))
def test_warm_caches_decide_like_cold_ones(
    raw: list[dict[str, Any]], calls: list[tuple[str, Any]]
) -> None:
    """One decision point deciding a stream (directory and step caches warm, repeats
    included) gives every request the trail a fresh, one-by-one decision point gives it."""
    grouped, single = decision_points(raw)
    for tool, path in calls + calls:
        request = {"tool": tool, "args": {"path": path}}
        fresh = decision_points(raw)[1].decide(request)
        for decision in (grouped.decide(request), single.decide(request)):
            assert decision.why_trail == fresh.why_trail
            assert decision.matched_rule == fresh.matched_rule


grouped_conditions = st.one_of(*path_tests)


@st.composite
def lone_rules(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rules that group on ``args.path`` (mostly one group a tool: one class for all of them,
    now and then a rule that is checked one by one), every effect, some with a message."""
    field_class = draw(st.sampled_from([None, "path", "shown"]))
    conditions = grouped_conditions
    if draw(st.integers(0, 3)) == 0:  # a plan with a rule checked one by one beside the group
        conditions |= st.just({"regex": ["^/etc", "x$"]})
    rules = []
    for _ in range(draw(st.integers(1, 8))):
        condition = draw(conditions)
        if field_class is not None:
            condition = {**condition, "class": field_class}
        rule: dict[str, Any] = {
            "effect": draw(
                st.sampled_from(["allow", "audit", "deny", "block", "require-approval"])
            ),
            "when": {
                "tool": draw(st.sampled_from(["fs.write", "fs.read"])),
                "args.path": condition,
            },
        }
        if draw(st.booleans()):
            rule["message"] = "said so"
        rules.append(rule)
    return rules


def lone_and_general(raw: list[dict[str, Any]]) -> tuple[DecisionPoint, DecisionPoint]:
    """The pack's decision point, and one whose plans never take the one-group path (every
    plan's ``lone`` left out, so its group's hits are built and ranked as for any plan)."""
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw)]
    data = {
        "policy": "p",
        "version": "1",
        "default": "deny",
        "field_classes": {"path": {"kind": "path"}, "shown": {"reveal": True}},
        "rules": numbered,
    }
    original = compile_module.make_plan
    return _beside(data, "make_plan", lambda rules: replace(original(rules), lone=None))


def _comparable(decision: Any) -> dict[str, Any]:
    """A decision's record without what differs by the clock and chance alone."""
    record: dict[str, Any] = decision.to_dict()
    del record["decision_id"], record["decided_at"]
    approval = record.get("approval")
    if approval is not None:
        record["approval"] = {
            k: v for k, v in approval.items() if k not in ("request_id", "expires_at", "seal")
        }
    return record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lone_rules(), st.lists(st.tuples(st.sampled_from(["fs.write", "fs.read"]), paths), max_size=8)
)
def test_a_one_group_plan_decides_as_the_general_path(
    raw: list[dict[str, Any]], calls: list[tuple[str, Any]]
) -> None:
    """``DecisionPoint._lone_rules`` (a speed twin: a tool whose rules all group on one string
    field, its rules picked by position) gives whole decisions equal to the general path's,
    repeats included (warm step caches)."""
    lone, general = lone_and_general(raw)
    for tool, path in calls + calls:
        request = {"tool": tool, "args": {"path": path}, "caller": {"agent": "a", "session": "s"}}
        assert _comparable(lone.decide(request)) == _comparable(general.decide(request))
