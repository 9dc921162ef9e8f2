"""List fields: ``args.paths[*]`` and ``args.paths[N]`` (docs/policy.md, Lists)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Action

PackFactory = Callable[..., DecisionPoint]
CLASSES = {"file-path": {"sensitive": True}, "name": {"reveal": True}}
DENY_SECRETS = {
    "id": "secrets",
    "effect": "deny",
    "when": {"tool": "fs.copy", "args.paths[*]": {"glob": "**/.env", "class": "file-path"}},
}
ALLOW_WORKSPACE = {
    "id": "workspace",
    "effect": "allow",
    "when": {"tool": "fs.copy", "args.paths[*]": {"prefix": "/workspace/", "class": "file-path"}},
}


def copy(*paths: Any) -> dict[str, Any]:
    return {"tool": "fs.copy", "args": {"paths": list(paths)}}


@pytest.fixture
def dp(dp_for: PackFactory) -> DecisionPoint:
    return dp_for([DENY_SECRETS, ALLOW_WORKSPACE], field_classes=CLASSES)


def test_deny_matches_when_any_element_matches(dp: DecisionPoint) -> None:
    d = dp.decide(copy("/workspace/a.py", "/workspace/.env"))
    assert (d.action, d.matched_rule) == (Action.DENY, "secrets")
    step = d.why_trail[0]
    assert step.field == "args.paths[1]"
    assert step.detail == "any element: [0] false, [1] true"
    assert step.value is not None
    assert step.value.startswith("<redacted:")  # the element's token, never the path


def test_allow_needs_every_element(dp: DecisionPoint) -> None:
    assert dp.decide(copy("/workspace/a", "/workspace/b")).action is Action.ALLOW
    d = dp.decide(copy("/workspace/a", "/tmp/b"))
    assert (d.action, d.matched_rule) == (Action.DENY, "@default")
    step = next(s for s in d.why_trail if s.rule == "workspace")
    assert (step.matched, step.field) == (False, "args.paths[1]")
    assert step.detail == "every element: [0] true, [1] false"


def test_unknown_element_fails_closed_under_deny(dp: DecisionPoint) -> None:
    d = dp.decide(copy("/workspace/a", 7))
    assert (d.action, d.matched_rule) == (Action.DENY, "secrets")
    assert d.why_trail[0].missing
    assert d.why_trail[0].detail == "any element: [0] false, [1] unknown"


def test_unknown_element_never_satisfies_an_allow(dp_for: PackFactory) -> None:
    dp = dp_for([ALLOW_WORKSPACE], field_classes=CLASSES)
    assert dp.decide(copy("/workspace/a", None)).matched_rule == "@default"


def test_empty_list_and_non_list(dp: DecisionPoint) -> None:
    d = dp.decide(copy())
    assert (d.action, d.matched_rule) == (Action.DENY, "@default")  # no element to allow
    d = dp.decide({"tool": "fs.copy", "args": {"paths": "/workspace/a"}})
    assert (d.action, d.matched_rule) == (Action.DENY, "secrets")  # not a list: unknown


def test_element_index_and_nested_keys(dp_for: PackFactory) -> None:
    rules = [
        {"id": "first", "effect": "deny", "when": {"args.items[0].name": "root"}},
        {"id": "owner", "effect": "allow", "when": {"args.items[*].name": {"in": ["a", "b"]}}},
    ]
    dp = dp_for(rules, field_classes=CLASSES)
    items = [{"name": "a"}, {"name": "b"}]
    assert dp.decide({"tool": "t", "args": {"items": items}}).action is Action.ALLOW
    assert dp.decide({"tool": "t", "args": {"items": [{"name": "root"}]}}).matched_rule == "first"
    d = dp.decide({"tool": "t", "args": {"items": [{"name": "a"}, {}]}})
    assert d.matched_rule == "@default"  # element 1 lacks the key: unknown, no allow


def test_input_filter_over_a_list(dp_for: PackFactory) -> None:
    filt = {"id": "no_env", "field": "args.paths[*]", "glob": "**/.env", "class": "file-path"}
    dp = dp_for([ALLOW_WORKSPACE], field_classes=CLASSES, input_filters=[filt])
    assert dp.decide(copy("/workspace/x/.env")).matched_rule == "no_env"
    assert dp.decide(copy("/workspace/x")).action is Action.ALLOW


@pytest.mark.parametrize("path", ["args.a[*][*]", "args.a[*].b[*]", "args.a[x]", "args.a]"])
def test_malformed_paths_are_load_errors(dp_for: PackFactory, path: str) -> None:
    with pytest.raises(PolicyError, match=r"\[\*\]"):
        dp_for([{"id": "r", "effect": "deny", "when": {path: "x"}}])


_PACK = {"policy": "t", "version": "1", "field_classes": CLASSES}
_DP = DecisionPoint(  # no deadline to speak of: a slow, shared machine must not fail closed here
    Pack.from_mapping({**_PACK, "rules": [DENY_SECRETS, ALLOW_WORKSPACE]}),
    Keyring.generate(),
    deadline_ms=60_000,
)


@given(st.lists(st.sampled_from(["/workspace/a", "/workspace/.env", "/tmp/x", 3]), max_size=6))
def test_list_semantics_equal_the_element_rules(items: list[Any]) -> None:
    dp = _DP
    strings = [i for i in items if isinstance(i, str)]
    any_secret = len(strings) != len(items) or any(s.endswith("/.env") for s in strings)
    all_workspace = bool(items) and all(s.startswith("/workspace/") for s in strings)
    all_workspace = all_workspace and len(strings) == len(items)
    expected = "secrets" if any_secret else "workspace" if all_workspace else "@default"
    assert dp.decide(copy(*items)).matched_rule == expected
