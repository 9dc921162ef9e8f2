"""A JSON Schema compiled into one yes-or-no check: is the instance valid? (a speed twin).

``jsonschema`` builds a validator object and an error iterator for every keyword of every
subschema it applies; on a 1,000-rule pack that was a third of the load. Most packs are valid,
and a valid pack needs no errors, so the pack schema is compiled once into nested closures that
answer ``is_valid`` alone, keyword by keyword as JSON Schema draft 2020-12 (§10, validation §6)
defines them and as ``jsonschema`` reads them. A pack this check does not call valid is
validated by ``jsonschema`` itself, whose errors are the ones reported
(``decide/_validate.py``), so only the answer "valid" must be exact: it is pinned to
``jsonschema``'s ``is_valid`` by tests/decide/test_schemacheck.py.

Only the keywords the pack schema uses are compiled; a schema with any other (or a ``$ref``
that ``inline_refs`` left in place) is ``UnsupportedKeywordError``, and then every pack goes to
``jsonschema``. Type tests are ``jsonschema``'s own (``_types.py`` of draft 2020-12).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Check", "UnsupportedKeywordError", "compile_check"]

Check = Callable[[Any], bool]
Build = Callable[[Any], Check]

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
)
_OBJECT = frozenset(
    {"properties", "additionalProperties", "required", "minProperties", "propertyNames"}
)
_ARRAY = frozenset({"items", "minItems"})
_STRING = frozenset({"pattern", "minLength"})
_NUMBER = frozenset({"minimum", "exclusiveMinimum"})
_OTHER = frozenset({"type", "enum", "const", "anyOf", "not", "if", "then", "else"})
_KNOWN = _ANNOTATIONS | _OBJECT | _ARRAY | _STRING | _NUMBER | _OTHER


class UnsupportedKeywordError(ValueError):
    """The schema uses a keyword (or a form of one) this compiler does not implement."""


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: Mapping[str, Check] = {
    "array": lambda value: isinstance(value, list),
    "boolean": lambda value: isinstance(value, bool),
    "integer": _is_integer,
    "null": lambda value: value is None,
    "number": _is_number,
    "object": lambda value: isinstance(value, dict),
    "string": lambda value: isinstance(value, str),
}


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _all_of(checks: Sequence[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    ordered = tuple(checks)

    def every(value: Any) -> bool:
        return all(check(value) for check in ordered)

    return every


def _type(names: Any) -> Check:
    listed = [names] if isinstance(names, str) else names
    if not isinstance(listed, list) or not all(name in _TYPES for name in listed):
        raise UnsupportedKeywordError(f"type {names!r}")
    tests = tuple(_TYPES[name] for name in listed)
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _strings(values: Any, keyword: str) -> tuple[str, ...]:
    """``enum`` and ``const`` of strings only: ``jsonschema``'s ``equal`` is then ``==``."""
    listed = values if isinstance(values, list) else [values]
    if not all(isinstance(item, str) for item in listed):
        raise UnsupportedKeywordError(f"{keyword} of values other than strings")
    return tuple(listed)


def _enum(values: Any, keyword: str) -> Check:
    allowed = _strings(values, keyword)
    return lambda value: any(item == value for item in allowed)


def _object(schema: Mapping[str, Any], build: Build) -> Check:
    """``properties``, ``additionalProperties``, ``required``, ``minProperties`` and
    ``propertyNames`` in one pass over an object's members; anything else passes."""
    props = {name: build(sub) for name, sub in schema.get("properties", {}).items()}
    extra_schema = schema.get("additionalProperties", True)
    extra = build(extra_schema) if extra_schema is not True else None
    names = build(schema["propertyNames"]) if "propertyNames" in schema else None
    required = tuple(schema.get("required", ()))
    least = schema.get("minProperties", 0)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        if len(value) < least or any(name not in value for name in required):
            return False
        for key, member in value.items():
            test = props.get(key, extra)
            if test is not None and not test(member):
                return False
            if names is not None and not names(key):
                return False
        return True

    return check


def _array(schema: Mapping[str, Any], build: Build) -> Check:
    """``items`` (no ``prefixItems``) and ``minItems``; anything but a list passes."""
    item = build(schema["items"]) if "items" in schema else None
    least = schema.get("minItems", 0)

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        if len(value) < least:
            return False
        return item is None or all(item(element) for element in value)

    return check


def _string(schema: Mapping[str, Any]) -> Check:
    """``pattern`` (Python's ``re.search``, as ``jsonschema``) and ``minLength``."""
    search = re.compile(schema["pattern"]).search if "pattern" in schema else None
    least = schema.get("minLength", 0)

    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        return len(value) >= least and (search is None or search(value) is not None)

    return check


def _number(schema: Mapping[str, Any]) -> Check:
    low, above = schema.get("minimum"), schema.get("exclusiveMinimum")

    def check(value: Any) -> bool:
        if not _is_number(value):
            return True
        if low is not None and value < low:
            return False
        return not (above is not None and value <= above)

    return check


def _conditional(schema: Mapping[str, Any], build: Build) -> Check:
    """``if`` / ``then`` / ``else`` (``then`` and ``else`` mean nothing without ``if``)."""
    test = build(schema["if"])
    then = build(schema.get("then", True))
    other = build(schema.get("else", True))
    return lambda value: then(value) if test(value) else other(value)


def _keywords(schema: Mapping[str, Any], build: Build) -> list[Check]:
    unknown = sorted(set(schema) - _KNOWN)
    if unknown:
        raise UnsupportedKeywordError(f"keyword {unknown[0]!r}")
    checks: list[Check] = []
    if "type" in schema:
        checks.append(_type(schema["type"]))
    checks.extend(_enum(schema[key], key) for key in ("enum", "const") if key in schema)
    if _OBJECT & set(schema):
        checks.append(_object(schema, build))
    if _ARRAY & set(schema):
        checks.append(_array(schema, build))
    if _STRING & set(schema):
        checks.append(_string(schema))
    if _NUMBER & set(schema):
        checks.append(_number(schema))
    if "anyOf" in schema:
        options = tuple(build(sub) for sub in schema["anyOf"])
        checks.append(lambda value: any(option(value) for option in options))
    if "not" in schema:
        negated = build(schema["not"])
        checks.append(lambda value: not negated(value))
    if "if" in schema:
        checks.append(_conditional(schema, build))
    return checks


def compile_check(schema: Any) -> Check:
    """``schema`` (its references inlined, cycles allowed) as one validity check; raises
    ``UnsupportedKeywordError`` when it uses what this module does not implement."""
    done: dict[int, Check] = {}

    def build(node: Any) -> Check:
        if node is True or node is False:
            return _always if node else _never
        if not isinstance(node, dict):
            raise UnsupportedKeywordError(f"a schema that is a {type(node).__name__}")
        if id(node) in done:
            return done[id(node)]
        late: list[Check] = []
        done[id(node)] = lambda value: late[0](value)  # noqa: PLW0108 (a use inside itself)
        late.append(_all_of(_keywords(node, build)))
        done[id(node)] = late[0]
        return late[0]

    return build(schema)
