"""Receipts: an entry's inclusion proof against a signed checkpoint, checkable offline.

``verify_receipt`` needs only the entry, the receipt and (ideally) the journal's public key,
obtained out of band: it recomputes the leaf hash (RFC 9162 §2.1.1), checks the checkpoint's
Ed25519 signature (c2sp.org/signed-note) and the inclusion proof (RFC 9162 §2.1.3.2).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from refusalkit.errors import NotAReceiptError, UsageError, VerificationError
from refusalkit.journal._checkpoint import open_checkpoint
from refusalkit.journal._note import NoteVerifier
from refusalkit.journal._tree import leaf_hash, verify_inclusion
from refusalkit.model import canonical_json

__all__ = ["RECEIPT_SCHEMA", "Receipt", "verify_receipt"]

RECEIPT_SCHEMA = "refusalkit.journal-receipt/v1"
_VKEY = re.compile(r"[^+\s]+\+[0-9a-f]{8}\+")


def _unhex(value: str, what: str) -> bytes:
    try:
        return bytes.fromhex(value)
    except (ValueError, TypeError) as exc:
        raise VerificationError(f"receipt {what} is not hex") from exc


@dataclass(frozen=True, slots=True)
class Receipt:
    """Proof that entry ``index`` is in the log whose signed checkpoint has ``tree_size``."""

    index: int
    tree_size: int
    leaf_hash: str
    hashes: tuple[str, ...]
    checkpoint: str
    origin: str
    key_name: str
    public_key: str

    def to_dict(self) -> dict[str, Any]:
        """Wire form ``refusalkit.journal-receipt/v1``."""
        return {
            "schema": RECEIPT_SCHEMA,
            "index": self.index,
            "tree_size": self.tree_size,
            "leaf_hash": self.leaf_hash,
            "hashes": list(self.hashes),
            "checkpoint": self.checkpoint,
            "origin": self.origin,
            "key_name": self.key_name,
            "public_key": self.public_key,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Receipt:
        """Parse the wire form.

        Raises ``NotAReceiptError`` saying what ``data`` is when it is no receipt at all (an error
        answer of the service, another record), and ``VerificationError`` naming the field when
        a record that says it is a receipt has a bad or missing one.
        """
        other = _not_a_receipt(data)
        if other is not None:
            raise NotAReceiptError(f"not a journal receipt: {other}")
        try:
            return cls(
                index=int(data["index"]),
                tree_size=int(data["tree_size"]),
                leaf_hash=str(data["leaf_hash"]),
                hashes=tuple(str(h) for h in data["hashes"]),
                checkpoint=str(data["checkpoint"]),
                origin=str(data["origin"]),
                key_name=str(data["key_name"]),
                public_key=str(data["public_key"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise VerificationError(f"not a journal receipt: bad or missing {exc}") from exc


def _not_a_receipt(data: Any) -> str | None:
    """What ``data`` is instead of a receipt, or None when it may be one (its schema says so, or
    it has a receipt's fields and no schema)."""
    if not isinstance(data, Mapping):
        return f"a JSON {type(data).__name__}, not an object"
    error = data.get("error")
    if isinstance(error, Mapping) and "index" not in data:
        code, message = error.get("code", "?"), error.get("message", "")
        return f"an error answer ({code}: {message})" if message else f"an error answer ({code})"
    schema = data.get("schema")
    if schema is not None and schema != RECEIPT_SCHEMA:
        return f"a {schema} record, not {RECEIPT_SCHEMA}"
    if schema is None and not {"index", "leaf_hash", "checkpoint"} & set(data):
        return "an object with none of a receipt's fields (index, leaf_hash, checkpoint)"
    return None


def _trusted(receipt: Receipt, public_key: bytes | str | None) -> NoteVerifier:
    if isinstance(public_key, str):
        return _from_text(receipt, public_key)
    if public_key is None:
        try:
            public_key = base64.b64decode(receipt.public_key, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise VerificationError("receipt public_key is not base64") from exc
    if len(public_key) != 32:
        raise VerificationError(f"an Ed25519 public key has 32 bytes, not {len(public_key)}")
    try:
        return NoteVerifier.for_key(receipt.key_name, public_key)
    except UsageError as exc:
        raise VerificationError(f"receipt key: {exc.message}") from exc


def _from_text(receipt: Receipt, text: str) -> NoteVerifier:
    """A key given as text: a verifier key ``NAME+ID+BASE64`` (what ``refusalkit journal
    public-key`` prints) or the base64 of the 32 raw bytes (the service's ``public_key``)."""
    if _VKEY.match(text.strip()):
        return NoteVerifier.parse(text)
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError(
            f"{text[:60]!r} is not a public key",
            hint="Pass the verifier key NAME+ID+BASE64 that `refusalkit journal public-key` "
            "prints.",
        ) from exc
    return _trusted(receipt, raw)


def verify_receipt(
    entry: bytes | Mapping[str, Any] | None,
    receipt: Receipt,
    *,
    public_key: bytes | str | None = None,
) -> None:
    """Check that ``entry`` is at ``receipt.index`` in the log the signed checkpoint describes.

    ``public_key`` is the key you trust for the journal: the verifier key string that
    ``refusalkit journal public-key`` prints (``NAME+ID+BASE64``), or its 32 raw Ed25519 bytes
    (or their base64); when None, the receipt's own key is used, which proves integrity but not
    who signed: pin the key if you can. A checkpoint signed by another key raises
    ``UntrustedKeyError`` naming both key IDs. With ``entry`` None only the receipt's leaf hash
    is proven. Raises ``VerificationError`` (with ``index``) on any failure.
    """
    leaf = _unhex(receipt.leaf_hash, "leaf_hash")
    if entry is not None:
        data = entry if isinstance(entry, bytes) else canonical_json(dict(entry))
        leaf = leaf_hash(data)
    if leaf.hex() != receipt.leaf_hash.lower():
        raise VerificationError(
            f"entry does not match the receipt's leaf hash (index {receipt.index})",
            index=receipt.index,
        )
    checkpoint = open_checkpoint(
        receipt.checkpoint, [_trusted(receipt, public_key)], origin=receipt.origin
    )
    if checkpoint.size != receipt.tree_size:
        raise VerificationError(
            f"the proof is for size {receipt.tree_size} but the checkpoint has size "
            f"{checkpoint.size}",
            index=receipt.index,
        )
    proof = [_unhex(h, "hash") for h in receipt.hashes]
    verify_inclusion(receipt.index, receipt.tree_size, leaf, proof, checkpoint.root)
