"""Tool argument schemas (docs/design/policy.md, ``@schema``): a compiled fast path for common
schemas.

``jsonschema`` validates any draft 2020-12 schema but spends ~10 µs even on a small valid
object. Most tool schemas use a handful of keywords; for those we compile a plain predicate with
``jsonschema``'s exact semantics (``tests/decide/test_argschema.py`` checks it against
``jsonschema`` on random schemas and values). A schema using anything else — or any value that
fails the predicate — goes to ``jsonschema``, which also names the violated keyword and path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from refusalkit.decide._regex import search_predicate

__all__ = ["ArgSchema", "compile_predicate", "re2_validator", "schema_patterns"]

Predicate = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples", "$schema"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality as ``jsonschema`` defines it: booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _type(spec: Any) -> Predicate | None:
    names = spec if isinstance(spec, list) else [spec]
    if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    checks = [_TYPES[n] for n in names]
    return lambda v: any(check(v) for check in checks)


def _bound(keyword: str, limit: Any) -> Predicate | None:
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            return None
        kind = str if "Length" in keyword else list
        if keyword.startswith("min"):
            return lambda v: not isinstance(v, kind) or len(v) >= limit
        return lambda v: not isinstance(v, kind) or len(v) <= limit
    if not _is_number(limit):
        return None
    compare: dict[str, Callable[[Any], bool]] = {
        "minimum": lambda v: v >= limit,
        "maximum": lambda v: v <= limit,
        "exclusiveMinimum": lambda v: v > limit,
        "exclusiveMaximum": lambda v: v < limit,
    }
    test = compare[keyword]
    return lambda v: not _is_number(v) or test(v)


def _object(schema: dict[str, Any]) -> list[Predicate] | None:
    checks: list[Predicate] = []
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return None
    compiled = {}
    for name, sub in props.items():
        pred = compile_predicate(sub)
        if pred is None:
            return None
        compiled[name] = pred
    if compiled:
        items = tuple(compiled.items())
        checks.append(lambda v: not isinstance(v, dict) or all(p(v[k]) for k, p in items if k in v))
    required = schema.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            return None
        names = tuple(required)
        checks.append(lambda v: not isinstance(v, dict) or all(n in v for n in names))
    extra = schema.get("additionalProperties")
    if extra is not None:
        extra_pred = compile_predicate(extra)
        if extra_pred is None:
            return None
        known = frozenset(props)
        checks.append(
            lambda v: (
                not isinstance(v, dict)
                or all(extra_pred(x) for k, x in v.items() if k not in known)
            )
        )
    return checks


_OBJECT_KEYS = frozenset({"properties", "required", "additionalProperties"})
_BOUND_KEYS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum"}
    | {"exclusiveMinimum", "exclusiveMaximum"}
)


def _enum(value: Any) -> Predicate | None:
    if not isinstance(value, list):
        return None
    options = tuple(value)
    return lambda v: any(_equal(v, o) for o in options)


def _items(value: Any) -> Predicate | None:
    item = compile_predicate(value)
    if item is None:
        return None
    return lambda v: not isinstance(v, list) or all(item(x) for x in v)


def _keyword(key: str, value: Any) -> Predicate | None:
    if key in _BOUND_KEYS:
        return _bound(key, value)
    makers: dict[str, Callable[[Any], Predicate | None]] = {
        "type": _type,
        "enum": _enum,
        "const": lambda c: lambda v: _equal(v, c),
        "items": _items,
    }
    maker = makers.get(key)
    return maker(value) if maker is not None else None


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


def compile_predicate(schema: Any) -> Predicate | None:
    """A predicate equal to ``jsonschema``'s ``is_valid`` for ``schema``, or None if unsupported."""
    if schema is True or schema is False:
        return _always if schema else _never
    if not isinstance(schema, dict):
        return None
    checks = _object(schema) if _OBJECT_KEYS & schema.keys() else []
    if checks is None:
        return None
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in _OBJECT_KEYS:
            continue
        pred = _keyword(key, value)
        if pred is None:
            return None
        checks.append(pred)
    if len(checks) == 1:
        return checks[0]
    all_checks = tuple(checks)
    return lambda v: all(check(v) for check in all_checks)


class ArgSchema:
    """A tool's argument schema: the compiled predicate when there is one, and the validator."""

    __slots__ = ("_fast", "validator")

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self._fast = compile_predicate(validator.schema)

    def is_valid(self, args: Any) -> bool:
        """Whether ``args`` satisfies the schema (the validator decides whatever the predicate
        rejects, so a predicate can only ever be too strict, never too lenient)."""
        if self._fast is not None and self._fast(args):
            return True
        return bool(self.validator.is_valid(args))

    def iter_errors(self, args: Any) -> Any:
        """The validator's errors, for the trail."""
        return self.validator.iter_errors(args)


# -- patterns on RE2 ----------------------------------------------------------------------------
# JSON Schema's ``pattern`` and ``patternProperties`` run on ``re`` in ``jsonschema``, which
# backtracks: 26 characters can stall a decision for seconds. A tool schema comes from the pack,
# its arguments from the request, so every pattern runs on RE2 (linear time) instead, and a
# pattern RE2 cannot read is a load error (docs/policy.md, Safe loading).

_VALUES = frozenset({"enum", "const", "default", "examples"})  # data, not subschemas


def schema_patterns(
    schema: Any, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every ``pattern`` and ``patternProperties`` regex of a schema, with its schema path."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from schema_patterns(item, (*path, str(index)))
        return
    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            yield (*path, key), value
        elif key == "patternProperties" and isinstance(value, Mapping):
            for regex in value:
                yield (*path, key, regex), regex
        if key not in _VALUES:
            yield from schema_patterns(value, (*path, key))


@functools.lru_cache(maxsize=1024)
def _search(pattern: str) -> Callable[[str], bool]:
    return search_predicate(pattern)


def _pattern(
    validator: Any, pattern: str, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern)(instance):
        yield ValidationError(f"does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        search = _search(pattern)
        for key, value in instance.items():
            if search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, extra: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    searches = [_search(p) for p in schema.get("patternProperties", {})]
    extras = [
        key for key in instance
        if key not in known and not any(search(key) for search in searches)
    ]  # fmt: skip
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif extra is False and extras:
        yield ValidationError("additional properties are not allowed")


def re2_validator(cls: Any) -> Any:
    """``cls`` (a ``jsonschema`` validator class) with its regex keywords on RE2."""
    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        cls,
        validators={
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )
