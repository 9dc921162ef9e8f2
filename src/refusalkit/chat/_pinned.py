"""Files the guard trusts only at a digest pinned in code (the safety pack, the secret rules)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from refusalkit.errors import SafetyPackError

__all__ = ["read_pinned"]


def read_pinned(source: Path, sha256: str, what: str) -> bytes:
    """The bytes of ``source``, which must have SHA-256 ``sha256`` (hex); anything else, a missing
    or unreadable file included, is a ``SafetyPackError`` naming ``what``: fail closed."""
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise SafetyPackError(f"cannot read {what} {source}: {exc.strerror}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise SafetyPackError(f"{what} {source} was altered: sha256 {digest}, expected {sha256}")
    return raw
