"""``args.**``: a condition on every string anywhere in the arguments (docs/policy.md, Any field).

Under deny, block, audit and filters any string that matches counts; under allow every string
must. The trail names the string's own field path. A hypothesis test checks the engine against a
reference walk of the JSON value, written here independently of ``walk_strings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide._fields import FieldPathError, parse_field_path, walk_strings
from refusalkit.decide._kinds import parse_path
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Action

PackFactory = Callable[..., DecisionPoint]
CLASSES = {"p": {"kind": "path", "case_fold": True, "sensitive": True}, "t": {"sensitive": True}}
DENY = {"id": "secret", "effect": "deny", "when": {"args.**": {"regex": "x", "class": "t"}}}
ALLOW = {"id": "ok", "effect": "allow", "when": {"args.**": {"prefix": "a", "class": "t"}}}


def _reference(value: Any, path: str) -> list[tuple[str, str]]:
    """Every string in a JSON value, depth first, in document order: the reference walk."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for key, item in value.items():
            out += _reference(item, f"{path}.{key}")
        return out
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _reference(item, f"{path}[{i}]")]
    return []


KEYS = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(alphabet="abxy/.", max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(KEYS, JSON, max_size=4))
def test_args_walk_agrees_with_a_reference_walk(args: dict[str, Any]) -> None:
    keyring = Keyring.generate()
    data = {"policy": "t", "version": "1", "field_classes": CLASSES}
    # A deadline a loaded machine cannot reach: an overrun (deny + unavailable) is not the walk.
    deny = DecisionPoint(Pack.from_mapping({**data, "rules": [DENY]}), keyring, deadline_ms=1e4)
    allow = DecisionPoint(Pack.from_mapping({**data, "rules": [ALLOW]}), keyring, deadline_ms=1e4)
    strings = _reference(args, "args")
    assert walk_strings(args, "args") == strings
    decision = deny.decide({"tool": "t", "args": args})
    hits = [path for path, text in strings if "x" in text]
    assert (decision.matched_rule == "secret") == bool(hits)
    if hits:
        step = next(s for s in decision.why_trail if s.rule == "secret")
        assert step.field == hits[0]
    allowed = allow.decide({"tool": "t", "args": args}).action is Action.ALLOW
    assert allowed == (bool(strings) and all(text.startswith("a") for _, text in strings))


def test_non_strings_are_not_visited_and_a_missing_field_is_false(dp_for: PackFactory) -> None:
    dp = dp_for([DENY], field_classes=CLASSES, default="allow")
    assert dp.decide({"tool": "t", "args": {"n": 1, "b": True, "z": None}}).action is Action.ALLOW
    assert dp.decide({"tool": "t"}).action is Action.ALLOW
    assert dp.decide({"tool": "t", "args": {"a": [{"b": "x"}]}}).matched_rule == "secret"


def test_the_trail_names_the_string_and_counts_them(dp_for: PackFactory) -> None:
    dp = dp_for([DENY], field_classes=CLASSES)
    decision = dp.decide({"tool": "t", "args": {"files": [{"name": "a"}, {"name": "box"}]}})
    step = next(s for s in decision.why_trail if s.rule == "secret")
    assert step.field == "args.files[1].name"
    assert step.detail == "any string: 2 strings, 1 true, 1 false"
    assert step.value is not None
    assert step.value.startswith("<redacted:")


def test_odd_keys_are_not_named_in_the_trail(dp_for: PackFactory) -> None:
    dp = dp_for([DENY], field_classes=CLASSES)
    decision = dp.decide({"tool": "t", "args": {"sk-live 123": "x"}})
    step = next(s for s in decision.why_trail if s.rule == "secret")
    assert step.field == "args.*"


def test_a_false_walk_under_deny_has_the_fixed_step(dp_for: PackFactory) -> None:
    dp = dp_for([DENY], field_classes=CLASSES, default="allow")
    first = dp.decide({"tool": "t", "args": {"a": "b"}}).why_trail
    second = dp.decide({"tool": "t", "args": {"c": ["d", "e"]}}).why_trail
    assert first[0] is second[0]
    assert (first[0].field, first[0].test, first[0].value) == ("args.**", "regex x", None)


def test_path_kind_reads_every_string_and_skips_texts_that_are_no_path(
    dp_for: PackFactory,
) -> None:
    rule = {"id": "env", "effect": "deny", "when": {"args.**": {"glob": "**/.env", "class": "p"}}}
    dp = dp_for([rule], field_classes=CLASSES, default="allow")
    assert dp.decide({"tool": "t", "args": {"a": "/w//x/./.ENV"}}).matched_rule == "env"
    assert dp.decide({"tool": "t", "args": {"a": "../.env"}}).matched_rule == "env"
    assert dp.decide({"tool": "t", "args": {"a": "/../.env"}}).matched_rule == "env"
    many_lines = {"content": "see\n/w/.env\n", "empty": ""}
    assert dp.decide({"tool": "t", "args": many_lines}).action is Action.ALLOW


def test_lenient_paths_keep_what_climbs_above_the_start() -> None:
    assert parse_path("../a/../.env", lenient=True) == "../.env"
    assert parse_path("/../../etc/x", lenient=True) == "/etc/x"
    assert parse_path("a/../../b", lenient=True) == "../b"
    assert parse_path("x/./y//z", lenient=True) == "x/y/z"


@pytest.mark.parametrize("path", ["**", "args.**.x", "args.x[*].**", "args.a[0].**"])
def test_misplaced_double_star_is_a_field_path_error(path: str) -> None:
    with pytest.raises(FieldPathError, match=r"\*\*"):
        parse_field_path(path)


def test_misplaced_double_star_is_a_load_error() -> None:
    rule = {"id": "r", "effect": "deny", "when": {"args.**.x": "y"}}
    with pytest.raises(PolicyError, match=r"\*\* comes last"):
        Pack.from_mapping({"policy": "t", "version": "1", "rules": [rule]})


def test_filters_take_args_walk(dp_for: PackFactory) -> None:
    filters = [{"id": "no_x", "field": "args.**", "regex": "x", "class": "t"}]
    dp = dp_for([], field_classes=CLASSES, default="allow", input_filters=filters)
    decision = dp.decide({"tool": "t", "args": {"deep": {"er": ["ok", "xx"]}}})
    assert decision.matched_rule == "no_x"
    assert dp.decide({"tool": "t", "args": {"deep": "ok"}}).action is Action.ALLOW
