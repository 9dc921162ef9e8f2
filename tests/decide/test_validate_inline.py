"""The pack schema with its references inlined (``decide/_validate.py``, a speed twin) judges every
pack as the published schema does: the same errors, at the same places, with the same messages.

Imports the internal module to pin the twin to its reference (CONTRIBUTING.md, Speed twins): the
reference is the published schema, validated as ``jsonschema`` reads it, ``$ref`` by ``$ref``.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.exceptions import best_match

from refusalkit.decide import load_pack
from refusalkit.decide._validate import inline_refs
from refusalkit.examples import example_path
from refusalkit.schemas import load_schema
from support.strategies import json_values, plain_scalars

_SCHEMA = load_schema("policy-pack-v1")
_CLS = jsonschema.validators.validator_for(_SCHEMA)
REFERENCE = _CLS(_SCHEMA)
INLINED = _CLS(inline_refs(_SCHEMA))
PACKS = [
    dict(load_pack(example_path(name)).data) for name in ("agent-tools.yaml", "mcp-filesystem.yaml")
]
KEYS = st.sampled_from(
    ["id", "effect", "when", "tool", "args.path", "glob", "regex", "in", "not", "any", "all",
     "class", "message", "ttl", "under", "prefix", "cidr", "range", "kind", "x"]
)  # fmt: skip
VALUES = json_values(plain_scalars, keys=KEYS, max_leaves=8)


def _places(data: Any) -> list[tuple[Any, ...]]:
    """Every path into ``data``, the root included."""
    out: list[tuple[Any, ...]] = [()]
    if isinstance(data, dict):
        out += [(k, *p) for k, v in data.items() for p in _places(v)]
    elif isinstance(data, list):
        out += [(i, *p) for i, v in enumerate(data) for p in _places(v)]
    return out


def _mutated(pack: dict[str, Any], where: int, value: Any, drop: bool) -> Any:
    """``pack`` with the value at one of its paths replaced by ``value`` (or removed)."""
    data = copy.deepcopy(pack)
    places = [p for p in _places(data) if p]
    path = places[where % len(places)]
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return data


def _errors(validator: Any, data: Any) -> tuple[list[tuple[Any, ...]], Any]:
    errors = list(validator.iter_errors(data))
    seen = sorted((e.validator, list(e.absolute_path), e.message) for e in errors)
    best = best_match(errors)
    return seen, None if best is None else (best.validator, list(best.absolute_path), best.message)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(PACKS),
    st.lists(st.tuples(st.integers(0, 10_000), VALUES, st.booleans()), min_size=1, max_size=3),
)
def test_the_inlined_schema_judges_as_the_published_one(
    pack: dict[str, Any], changes: list[tuple[int, Any, bool]]
) -> None:
    data: Any = pack
    for where, value, drop in changes:
        data = _mutated(data, where, value, drop) if isinstance(data, dict) and data else data
    assert _errors(INLINED, data) == _errors(REFERENCE, data)


def test_the_bundled_packs_are_valid_under_both() -> None:
    for pack in PACKS:
        assert _errors(INLINED, pack) == _errors(REFERENCE, pack) == ([], None)
