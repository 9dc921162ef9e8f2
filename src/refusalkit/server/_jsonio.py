"""Fast JSON for the hot path: orjson when installed, else the standard library."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JSONDecodeError", "dumps", "loads"]

try:
    import orjson

    def dumps(value: Any) -> bytes:
        """Compact UTF-8 JSON bytes."""
        return orjson.dumps(value)

    def loads(data: bytes | str) -> Any:
        """Parse JSON; raises ``JSONDecodeError`` (a ``ValueError``)."""
        return orjson.loads(data)

    JSONDecodeError: type[ValueError] = orjson.JSONDecodeError

except ImportError:  # pragma: no cover (orjson is optional)

    def dumps(value: Any) -> bytes:
        """Compact UTF-8 JSON bytes."""
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def loads(data: bytes | str) -> Any:
        """Parse JSON; raises ``JSONDecodeError`` (a ``ValueError``)."""
        return json.loads(data)

    JSONDecodeError = json.JSONDecodeError
