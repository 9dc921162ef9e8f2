"""Validating a pack against the published JSON Schema, with errors at file, line and key.

The JSON Schema (``schemas/policy-pack-v1.schema.json``) checks the shape; the few rules a schema
states badly (reserved ``@`` ids, unique ids, declared classes) are checked here with a message
that says what to do.
"""

from __future__ import annotations

import difflib
from functools import cache
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from refusalkit._internal.source import Lines
from refusalkit.decide._schemacheck import Check, UnsupportedKeywordError, compile_check
from refusalkit.errors import PolicyError
from refusalkit.schemas import load_schema

__all__ = ["validate_pack_data"]


@cache
def _inlined() -> dict[str, Any]:
    return inline_refs(load_schema("policy-pack-v1"))


@cache
def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(load_schema("policy-pack-v1"))
    return cls(_inlined())


@cache
def _check() -> Check | None:
    try:
        return compile_check(_inlined())
    except UnsupportedKeywordError:  # every pack is then validated by jsonschema alone
        return None


def _surely_valid(data: Any) -> bool:
    """The compiled check's verdict (``_schemacheck.py``); false when it has none. A pack it
    does not call valid is validated by jsonschema, whose errors are reported."""
    check = _check()
    try:
        return check is not None and check(data)
    except Exception:  # noqa: BLE001 (a value no JSON type compares with: jsonschema judges it)
        return False


_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each bare ``{"$ref": "#/$defs/NAME"}`` (a ``description`` beside it at
    most) replaced by the schema it names, the very same object at every use, so recursive
    definitions become cycles (JSON Schema 2020-12 §8.2.3.1: such a ``$ref`` applies the named
    schema in place, which is what the object itself does). A validator then looks up no
    reference per instance: a 1,000-rule pack validates several times faster, with the same
    verdicts and messages (pinned by tests/decide/test_validate_inline.py)."""
    defs: dict[str, Any] = schema.get("$defs", {})
    done: dict[str, dict[str, Any]] = {}

    def named(name: str) -> dict[str, Any]:
        if name not in done:
            done[name] = {}  # filled below; a recursive use gets this same object
            done[name].update(walk(defs[name]))
        return done[name]

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and set(node) <= _BARE_REF:
            return named(ref.removeprefix("#/$defs/"))
        return {k: v if k in _DATA_KEYWORDS else walk(v) for k, v in node.items()}

    out: dict[str, Any] = walk(schema)
    return out


_BARE_REF = frozenset({"$ref", "description"})


def _reserved_ids(data: Any, lines: Lines) -> None:
    """Ids beginning with ``@`` name the stages (docs/design/policy.md): a load error, said
    plainly."""
    if not isinstance(data, dict):
        return
    for section in ("rules", "input_filters"):
        items = data.get(section)
        if not isinstance(items, list):
            continue
        seen: set[str] = set()
        for index, item in enumerate(items):
            ident = item.get("id") if isinstance(item, dict) else None
            if not isinstance(ident, str):
                continue
            if ident.startswith("@"):
                raise lines.error(
                    f"id {ident!r} begins with '@', which is reserved for the stages",
                    (section, index, "id"),
                    hint="Rename the rule; ids like @default and @scope name built-in stages.",
                )
            if ident in seen:
                raise lines.error(f"duplicate id {ident!r}", (section, index, "id"))
            seen.add(ident)


def _schema_error(error: ValidationError, lines: Lines) -> PolicyError:
    path = list(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        allowed = set(schema.get("properties", {}))
        extra = [key for key in error.instance if key not in allowed]
        if extra:
            path.append(extra[0])
            near = difflib.get_close_matches(extra[0], sorted(allowed), n=1, cutoff=0.6)
            guess = f" (did you mean {near[0]!r}?)" if near else ""
            message = f"unknown key {extra[0]!r}{guess}; allowed here: {', '.join(sorted(allowed))}"
            hint = f"Rename {extra[0]!r} to {near[0]!r}." if near else None
            return lines.error(message, path, hint=hint)
    return lines.error(message, path)


def _ttl_only_on_approvals(data: Any, lines: Lines) -> None:
    """``ttl`` on a rule whose effect is not ``require-approval`` is refused in words (the
    schema's own message for it would name a subschema, docs/design/approvals.md)."""
    rules = data.get("rules") if isinstance(data, dict) else None
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        if isinstance(rule, dict) and "ttl" in rule and rule.get("effect") != "require-approval":
            raise lines.error(
                f"ttl is only for require-approval rules, not effect {rule.get('effect')!r}",
                ("rules", index, "ttl"),
                hint="Remove ttl, or make the rule's effect require-approval.",
            )


def validate_pack_data(data: Any, lines: Lines) -> None:
    """Raise ``PolicyError`` at the first problem of ``data``; return when it is a valid pack."""
    _reserved_ids(data, lines)
    _ttl_only_on_approvals(data, lines)
    if _surely_valid(data):
        return
    errors = list(_validator().iter_errors(data))
    # An unknown key is usually the cause of the other errors ("efect" leaves "effect"
    # missing), so it is reported first, wherever it is, with its nearest valid spelling.
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    if unknown:
        raise _schema_error(
            min(unknown, key=lambda e: lines.line(list(e.absolute_path)) or 0), lines
        )
    error = best_match(errors)
    if error is not None:
        raise _schema_error(error, lines)
