"""The compiled validity check of the pack schema (``decide/_schemacheck.py``, a speed twin) calls
a pack valid exactly when ``jsonschema`` does on the published schema.

Imports the internal modules to pin the twin to its reference (CONTRIBUTING.md, Speed twins): the
reference is ``jsonschema``'s ``is_valid`` on the published schema, ``$ref`` by ``$ref``.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide import Pack, load_pack
from refusalkit.decide._schemacheck import UnsupportedKeywordError, compile_check
from refusalkit.decide._validate import inline_refs
from refusalkit.errors import PolicyError
from refusalkit.examples import example_path
from refusalkit.schemas import load_schema
from support.strategies import json_values, plain_scalars

_SCHEMA = load_schema("policy-pack-v1")
REFERENCE = jsonschema.validators.validator_for(_SCHEMA)(_SCHEMA)
CHECK = compile_check(inline_refs(_SCHEMA))
LIMITS = {
    "policy": "limits",
    "version": "v1",
    "sets": {"hosts": {"values": ["a.example", 3, None], "source": "x"}, "ids": ["x"]},
    "limits": [
        {"id": "calls", "per": "session", "max_calls": 5, "window_s": 1.5,
         "tools": {"glob": "fs.*"}, "message": "m"},
        {"id": "all", "per": "session", "max_calls": 1},
    ],
    "rules": [
        {"id": "ask", "effect": "require-approval", "ttl": "15m", "when": [{"tool": "deploy"}]},
        {"id": "net", "effect": "deny", "when": {"args.host": {"cidr": ["10.0.0.0/8"]},
                                                 "args.n": {"range": {"min": 0, "max": 9.5}}}},
        {"id": "neg", "effect": "audit", "when": {"args.id": {"not": {"in": [{"set": "ids"}, 1]}}}},
    ],
}  # fmt: skip
PACKS = [
    dict(load_pack(example_path(name)).data)
    for name in ("agent-tools.yaml", "mcp-filesystem.yaml", "release-approvals.yaml")
] + [LIMITS]
KEYS = st.sampled_from(
    ["id", "effect", "when", "tool", "args.path", "glob", "regex", "in", "not", "class", "message",
     "ttl", "under", "above", "prefix", "cidr", "range", "min", "max", "kind", "reveal", "set",
     "values", "source", "per", "max_calls", "window_s", "tools", "args", "field", "x", "a b", ""]
)  # fmt: skip
SCALARS = (
    plain_scalars
    | st.floats()
    | st.sampled_from([0, 1, -1, 0.0, 1.0, 2.5, True, False, "15m", "0s", "session", "deny",
                       "require-approval", "path", "a.b", "a..b", "@x", "", " "])
    # big integers, signed zero, NaN and infinities (data given to ``Pack.from_mapping``), a
    # trailing newline (``$`` matches before it under ``re.search``), astral characters
    # (``minLength`` counts code points), names of keywords and keys
    | st.sampled_from([10**30, -(10**30), -0.0, 1e308, float("nan"), float("inf"), "15m\n",
                       "a.b\n", "x\n", "\U0001f600", "\u00e9", "ttl", "effect", "const"])
)  # fmt: skip
VALUES = json_values(SCALARS, keys=KEYS, max_leaves=8)


def _places(data: Any) -> list[tuple[Any, ...]]:
    """Every path into ``data`` below the root."""
    out: list[tuple[Any, ...]] = []
    if isinstance(data, dict):
        out += [(k, *p) for k, v in data.items() for p in [(), *_places(v)]]
    elif isinstance(data, list):
        out += [(i, *p) for i, v in enumerate(data) for p in [(), *_places(v)]]
    return out


def _mutated(pack: Any, where: int, value: Any, how: int) -> Any:
    """``pack`` with one of its values replaced by ``value``, removed, or given a key ``value``."""
    data = copy.deepcopy(pack)
    places = _places(data)
    if not places:
        return value
    path = places[where % len(places)]
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    target = parent[path[-1]]
    if how == 0:
        parent[path[-1]] = value
    elif how == 1:
        del parent[path[-1]]
    elif isinstance(target, dict) and isinstance(value, str):
        target[value] = copy.deepcopy(target.get(value, 1))
    elif isinstance(target, list):
        target.append(value)
    return data


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(PACKS),
    st.lists(st.tuples(st.integers(0, 10_000), VALUES, st.integers(0, 2)), min_size=1, max_size=3),
)
def test_the_check_calls_a_pack_valid_exactly_when_jsonschema_does(
    pack: dict[str, Any], changes: list[tuple[int, Any, int]]
) -> None:
    data: Any = pack
    for where, value, how in changes:
        data = _mutated(data, where, value, how)
    assert CHECK(data) is REFERENCE.is_valid(data)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_any_value_is_judged_as_jsonschema_judges_it(value: Any) -> None:
    assert CHECK(value) is REFERENCE.is_valid(value)


def test_the_packs_used_above_are_valid() -> None:
    for pack in PACKS:
        assert CHECK(pack)
        assert REFERENCE.is_valid(pack)


@pytest.mark.parametrize(
    "schema",
    [{"patternProperties": {"a": {}}}, {"items": [{}]}, {"enum": [1]}, {"$ref": "#/x"},
     {"properties": {"a": {"maxLength": 3}}}, {"type": "decimal"}, []],
)  # fmt: skip
def test_a_keyword_it_does_not_implement_is_refused_not_ignored(schema: Any) -> None:
    with pytest.raises(UnsupportedKeywordError):
        compile_check(schema)


def test_an_invalid_pack_is_reported_by_jsonschema() -> None:
    """A pack the check refuses gets jsonschema's error, at its key."""
    data = copy.deepcopy(LIMITS)
    data["limits"][0]["max_calls"] = True
    with pytest.raises(PolicyError) as caught:
        Pack.from_mapping(data)
    assert caught.value.key == "limits[0].max_calls"
    assert "True is not of type 'integer'" in str(caught.value)
