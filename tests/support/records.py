"""Checking decision records against the published schema (refusalkit/schemas)."""

from __future__ import annotations

from typing import Any

import jsonschema

from refusalkit.schemas import load_schema

_DECISION = jsonschema.Draft202012Validator(load_schema("decision-v1"))


def valid_record(record: dict[str, Any]) -> dict[str, Any]:
    """Check a decision's wire form against the published schema; return it."""
    _DECISION.validate(record)
    return record
