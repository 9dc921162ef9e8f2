"""Checking decision records against the published schema (refusalkit/schemas)."""

from __future__ import annotations

from typing import Any

import jsonschema
from rfc8785 import IntegerDomainError

from refusalkit.model import Decision
from refusalkit.model import canonical_json as canonical_bytes
from refusalkit.schemas import load_schema

_DECISION = jsonschema.Draft202012Validator(load_schema("decision-v1"))


def valid_record(record: dict[str, Any]) -> dict[str, Any]:
    """Check a decision's wire form against the published schema; return it."""
    _DECISION.validate(record)
    return record


def refused_unencodable(decision: Decision, request: Any) -> bool:
    """Whether ``request`` is one RFC 8785 cannot encode; if so, check that ``decision`` refused
    it as the built-in engine does: an integer beyond ±(2**53 - 1) makes the request malformed
    (``input-rejected`` by ``@request``), any other such value (NaN, Infinity) fails closed."""
    try:
        canonical_bytes(request)
    except IntegerDomainError:
        expected: tuple[str, ...] = ("deny", "input-rejected", "@request")
    except Exception:
        expected = ("deny", "unavailable", "@unavailable")
    else:
        return False
    assert (decision.action, decision.reason_code, decision.matched_rule) == expected
    return True
