"""Naming a schema failure by the schema, never by the request (docs/decision.md, Redaction).

When a tool's arguments fail their schema, the trail says where in the *schema* they failed:
the field as the schema names it (``args.path``, ``args.items[*]``) and the JSON Pointer
(RFC 6901) of the violated keyword. The instance path is not used: its object keys are the
request's own text (``{"X-Api-Key: sk_live_...": 1}``), which a trail must not carry.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["schema_field", "schema_pointer"]

_ITEMS = frozenset({"items", "additionalItems", "contains", "unevaluatedItems"})


def schema_field(schema_path: Sequence[str | int]) -> str:
    """The field a failing keyword is about, named from the schema's ``properties``."""
    out = "args"
    index = 0
    while index < len(schema_path):
        part = schema_path[index]
        if part == "properties" and index + 1 < len(schema_path):
            out += f".{schema_path[index + 1]}"
            index += 2
        elif part == "prefixItems" and index + 1 < len(schema_path):
            out += f"[{schema_path[index + 1]}]"
            index += 2
        elif part in _ITEMS:
            out += "[*]"
            index += 1
        else:
            break
    return out


def schema_pointer(schema_path: Sequence[str | int]) -> str:
    """RFC 6901 JSON Pointer of a schema location, as a URI fragment (``#/properties/a/type``)."""
    escaped = (str(part).replace("~", "~0").replace("/", "~1") for part in schema_path)
    return "#/" + "/".join(escaped) if schema_path else "#"
