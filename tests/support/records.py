"""Checking decision records against the published schema (refusalkit/schemas)."""

from __future__ import annotations

from typing import Any

import jsonschema
from rfc8785 import IntegerDomainError

from refusalkit.model import canonical_json as canonical_bytes
from refusalkit.schemas import load_schema

_DECISION = jsonschema.Draft202012Validator(load_schema("decision-v1"))


def valid_record(record: dict[str, Any]) -> dict[str, Any]:
    """Check a decision's wire form against the published schema; return it."""
    _DECISION.validate(record)
    return record


def canonicalisable(value: Any) -> bool:
    """Whether RFC 8785 can encode ``value`` (integers within ±2**53 - 1, no lone surrogates):
    a request that it cannot has no digest, so every decision on it fails closed."""
    try:
        canonical_bytes(value)
    except Exception:
        return False
    return True


def big_integer(value: Any) -> bool:
    """Whether RFC 8785 refuses ``value`` for an integer beyond ±(2**53 - 1): a malformed request
    (``input-rejected`` by ``@request``); any other value it cannot encode fails closed."""
    try:
        canonical_bytes(value)
    except IntegerDomainError:
        return True
    except Exception:
        return False
    return False
