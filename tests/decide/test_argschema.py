"""The compiled argument-schema predicate agrees with ``jsonschema`` (draft 2020-12)."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide._argschema import ArgSchema, compile_predicate
from support.strategies import json_values

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, -2.0]),
    st.sampled_from(["", "a", "ab", "abc", "é"]),
)
values = json_values(
    scalars, keys=st.sampled_from(["path", "n", "x", "flag"]), max_size=3, max_leaves=8
)
type_names = st.sampled_from(["string", "object", "array", "boolean", "null", "number", "integer"])
leaf = st.one_of(
    st.builds(lambda t: {"type": t}, type_names | st.lists(type_names, min_size=1, max_size=2)),
    st.builds(lambda n: {"minLength": n}, st.integers(0, 3)),
    st.builds(lambda n: {"maxLength": n}, st.integers(0, 3)),
    st.builds(lambda n: {"minimum": n}, st.integers(-2, 2) | st.just(0.5)),
    st.builds(lambda n: {"exclusiveMaximum": n}, st.integers(-2, 2)),
    st.builds(lambda n: {"maxItems": n}, st.integers(0, 2)),
    st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=3)),
    st.builds(lambda c: {"const": c}, scalars),
    st.just({"pattern": "^a"}),  # unsupported: falls back
    st.just({}),
    st.booleans(),
)
schemas = st.recursive(
    leaf,
    lambda c: (
        st.builds(
            lambda props, req, extra, typ: {
                "type": typ,
                "properties": props,
                **({"required": req} if req else {}),
                **({"additionalProperties": extra} if extra is not None else {}),
            },
            st.dictionaries(st.sampled_from(["path", "n", "x"]), c, max_size=2),
            st.lists(st.sampled_from(["path", "n", "flag"]), max_size=2, unique=True),
            st.none() | st.booleans() | c,
            st.sampled_from(["object", ["object", "null"]]),
        )
        | st.builds(lambda item: {"type": "array", "items": item}, c)
    ),
    max_leaves=6,
)


@settings(max_examples=300)
@given(schemas, values)
def test_predicate_agrees_with_jsonschema(schema: Any, value: Any) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    expected = validator.is_valid(value)
    predicate = compile_predicate(schema)
    if predicate is not None:
        assert predicate(value) is expected, (schema, value)
    assert ArgSchema(validator).is_valid(value) is expected


def test_unsupported_keywords_fall_back() -> None:
    assert compile_predicate({"type": "string", "pattern": "^a"}) is None
    assert compile_predicate({"$ref": "#/$defs/x"}) is None
    assert compile_predicate({"properties": {"a": {"format": "email"}}}) is None
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^/"}}}
    arg = ArgSchema(jsonschema.Draft202012Validator(schema))
    assert arg.is_valid({"p": "/x"})
    assert not arg.is_valid({"p": "x"})


def test_common_tool_schema_compiles() -> None:
    schema = {
        "type": "object",
        "required": ["path", "content"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "content": {"type": "string", "maxLength": 10},
            "mode": {"enum": ["overwrite", "append"]},
        },
        "additionalProperties": False,
    }
    predicate = compile_predicate(schema)
    assert predicate is not None
    assert predicate({"path": "/a", "content": "x"})
    assert not predicate({"path": "/a"})
    assert not predicate({"path": "/a", "content": "x", "other": 1})
    assert not predicate({"path": "", "content": "x"})
    assert not predicate({"path": "/a", "content": "x", "mode": "truncate"})
