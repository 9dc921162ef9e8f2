"""Which journal keys a baseline's receipt must be signed with (docs/design/journal.md,
docs/design/provenance.md).

A receipt carries the public key that signed its checkpoint, but a file can be re-signed with any
key: the key inside the file proves integrity, not who signed. Verification therefore takes the
trusted keys from outside the file: a pinned key, or the signing keys of a keyring (all of them,
so a receipt signed before a key rotation still verifies).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from refusalkit.errors import VerificationError

if TYPE_CHECKING:
    from refusalkit.journal import Receipt
    from refusalkit.keyring import Keyring

__all__ = ["keyring_public_keys", "verify_trusted"]

_TRUST_HINT = (
    "Pass the journal's public key: --public-key (base64, C2SP vkey or keyring file) or "
    "--keyring on the CLI; public_key= or keyring= in Python."
)


def keyring_public_keys(keyring: Keyring) -> tuple[bytes, ...]:
    """The 32-byte public keys of every signing key in ``keyring`` (RFC 8032 §5.1.5)."""
    return tuple(keyring.public_key_bytes(kid) for kid in keyring.signing_keys)


def _short(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")[:12] + "..."


def _receipt_key(receipt: Receipt) -> bytes | None:
    try:
        return base64.b64decode(receipt.public_key, validate=True)
    except ValueError:
        return None


def verify_trusted(
    entry: Mapping[str, Any] | bytes, receipt: Receipt, trusted: Sequence[bytes]
) -> bytes:
    """Verify ``receipt`` for ``entry`` against one of the ``trusted`` keys; return that key.

    Fails closed: no trusted key, or a receipt whose key is none of them, is a
    :class:`VerificationError` (with a hint naming ``--public-key``), as is any proof failure.
    """
    from refusalkit.journal import verify_receipt  # noqa: PLC0415 (journal loads lazily)

    if not trusted:
        raise VerificationError(
            "no trusted journal key to check the receipt against", hint=_TRUST_HINT
        )
    claimed = _receipt_key(receipt)
    if claimed not in trusted:
        shown = _short(claimed) if claimed is not None else "an unreadable key"
        raise VerificationError(
            f"the receipt is signed by {shown}, which is not a trusted journal key "
            f"({len(trusted)} trusted)",
            index=receipt.index,
            hint=_TRUST_HINT,
        )
    assert claimed is not None  # it is one of the trusted keys
    verify_receipt(entry, receipt, public_key=claimed)
    return claimed
