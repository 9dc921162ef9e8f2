"""Rules decided together by lookups (``FieldGroup``) decide exactly as rules checked one by one."""

from __future__ import annotations

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
indexable = st.one_of(
    st.builds(lambda n: {"glob": f"**/{n}"}, names),
    st.builds(lambda d: {"glob": f"{d}/**"}, dirs),
    st.builds(lambda d, n: {"glob": f"{d}/{n}"}, dirs, names),
    st.builds(lambda d: {"prefix": f"{d}/"}, dirs),
    st.builds(lambda vs: {"in": vs}, st.lists(names, min_size=1, max_size=3)),
    names,
    st.builds(
        lambda a, b: {"glob": [f"**/{a}", f"{b}/**"]},
        names,
        dirs,
    ),
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


def decide_both(raw: list[dict[str, Any]], request: dict[str, Any]) -> tuple[Any, Any]:
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw)]
    data = {"policy": "p", "version": "1", "default": "allow", "rules": numbered}
    grouped = DecisionPoint(Pack.from_mapping(data), KEYRING).decide(request)
    original = compile_module._groupable
    compile_module._groupable = lambda rule: None  # every rule checked one by one
    try:
        single = DecisionPoint(Pack.from_mapping(data), KEYRING).decide(request)
    finally:
        compile_module._groupable = original
    return grouped, single


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
