"""Keyed redaction tokens and request digests (docs/design/decision.md, Redaction).

A token is ``<redacted:hmac-sha256:{key_id}:{first 16 hex of HMAC-SHA256(key, class NUL value)}>``.
Keyed, not salted: without the key, a reader cannot test guesses of a low-entropy secret, while
the same key and value still give the same token, so occurrences correlate.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from refusalkit.model import canonical_json

__all__ = ["Redactor", "value_text"]


def value_text(value: Any) -> str:
    """The text a value is redacted as: strings as they are, anything else as canonical JSON."""
    if isinstance(value, str):
        return value
    return canonical_json(value).decode("utf-8")


class Redactor:
    """Makes redaction tokens and keyed digests with one key id (RFC 2104 HMAC-SHA256)."""

    __slots__ = ("_base", "key_id")

    def __init__(self, key_id: str, key: bytes) -> None:
        self.key_id = key_id
        self._base = hmac.new(key, digestmod=hashlib.sha256)

    def _mac(self, data: bytes) -> str:
        mac = self._base.copy()
        mac.update(data)
        return mac.hexdigest()

    def token(self, field_class: str, value: Any) -> str:
        """The redaction token of ``value`` in ``field_class``."""
        data = field_class.encode("utf-8") + b"\x00" + value_text(value).encode("utf-8")
        return f"<redacted:hmac-sha256:{self.key_id}:{self._mac(data)[:16]}>"

    def digest(self, data: bytes) -> str:
        """``hmac-sha256:{key_id}:{hex}`` of ``data``: correlates requests, reveals nothing."""
        return f"hmac-sha256:{self.key_id}:{self._mac(data)}"
