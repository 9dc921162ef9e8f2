"""Canonical JSON: RFC 8785 (JCS), the byte form that is hashed, signed and journaled."""

from __future__ import annotations

from typing import Any

import rfc8785

__all__ = ["canonical_json"]


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value (UTF-8, sorted keys, ES6 numbers)."""
    return rfc8785.dumps(value)
