"""C2SP tlog-cosignature, Ed25519 (``cosignature/v1``): make and check witness cosignatures.

A cosignature is a signed-note signature line on a checkpoint. Its key ID is
``SHA-256(name || "\\n" || 0x04 || public key)[:4]``; after the key ID comes a
``timestamped_signature``: a big-endian u64 POSIX time, then the Ed25519 signature over
``"cosignature/v1\\ntime <t>\\n" || checkpoint body``. Verifier keys are ``name+hexid+base64(0x04
|| key)`` vkeys (C2SP tlog-cosignature, "Format" and "Ed25519 signed message").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal import NoteSignature, parse_checkpoint_body, parse_note, valid_key_name

__all__ = [
    "COSIGNATURE_TYPE",
    "Cosignature",
    "CosignerKey",
    "cosign",
    "cosigned_message",
    "parse_cosignature",
    "verify_cosignatures",
    "witnessed_sizes",
]

COSIGNATURE_TYPE = 0x04
MAX_TIMESTAMP = 2**63 - 1
_HEX8 = re.compile(r"[0-9a-f]{8}")


def cosigner_key_id(name: str, public_key: bytes) -> int:
    """``SHA-256(name || 0x0A || 0x04 || public key)[:4]`` as a big-endian uint32."""
    material = name.encode("utf-8") + b"\n" + bytes([COSIGNATURE_TYPE]) + public_key
    return int.from_bytes(hashlib.sha256(material).digest()[:4], "big")


def cosigned_message(body: str, timestamp: int) -> bytes:
    """The signed message: ``cosignature/v1``, ``time <t>``, then the checkpoint body."""
    return f"cosignature/v1\ntime {timestamp}\n{body}".encode()


@dataclass(frozen=True, slots=True)
class CosignerKey:
    """A witness's Ed25519 cosigning key as verifiers hold it: name, key ID, 32 raw bytes."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def for_key(cls, name: str, public_key: bytes) -> CosignerKey:
        """The cosigner key of ``public_key`` under ``name``, with the spec's key ID."""
        if not valid_key_name(name) or len(public_key) != 32:
            raise UsageError(f"not a cosigner key: name {name!r}, {len(public_key)} key bytes")
        return cls(name, cosigner_key_id(name, public_key), bytes(public_key))

    @classmethod
    def parse(cls, vkey: str) -> CosignerKey:
        """Parse ``name+hexid+base64(0x04 || key)``; the ID must match the key."""
        parts = vkey.strip().split("+", 2)
        if len(parts) != 3 or not valid_key_name(parts[0]) or not _HEX8.fullmatch(parts[1]):
            raise UsageError(
                f"{vkey!r} is not a witness key",
                hint="Expected NAME+HEXID+BASE64, as `refusalkit witness init` prints it.",
            )
        try:
            raw = base64.b64decode(parts[2], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise UsageError(f"witness key {parts[0]}: not base64") from exc
        if len(raw) != 33 or raw[0] != COSIGNATURE_TYPE:
            raise UsageError(
                f"witness key {parts[0]} is not an Ed25519 cosignature (type 0x04) key",
                hint="A log's own key (type 0x01) cannot check cosignatures.",
            )
        key = cls.for_key(parts[0], raw[1:])
        if f"{key.key_id:08x}" != parts[1]:
            raise UsageError(f"witness key {parts[0]}: the key ID does not match the key")
        return key

    @property
    def vkey(self) -> str:
        """The verifier key string ``name+hexid+base64(0x04 || key)``."""
        material = base64.b64encode(bytes([COSIGNATURE_TYPE]) + self.public_key).decode("ascii")
        return f"{self.name}+{self.key_id:08x}+{material}"


@dataclass(frozen=True, slots=True)
class Cosignature:
    """A parsed cosignature line: cosigner name, key ID, timestamp and Ed25519 signature."""

    name: str
    key_id: int
    timestamp: int
    signature: bytes


def parse_cosignature(sig: NoteSignature) -> Cosignature:
    """Read a signature line as an Ed25519 ``timestamped_signature`` (8 + 64 bytes)."""
    if len(sig.signature) != 72:
        raise VerificationError(
            f"signature of {sig.name} is not an Ed25519 cosignature ({len(sig.signature)} bytes)"
        )
    timestamp = int.from_bytes(sig.signature[:8], "big")
    if timestamp > MAX_TIMESTAMP:
        raise VerificationError(f"cosignature of {sig.name}: timestamp exceeds 2^63 - 1")
    return Cosignature(sig.name, sig.key_id, timestamp, sig.signature[8:])


def cosign(body: str, name: str, key: Ed25519PrivateKey, timestamp: int) -> NoteSignature:
    """Cosign a checkpoint body (its note text) at ``timestamp``; the signature line to add."""
    if not 0 < timestamp <= MAX_TIMESTAMP:
        raise UsageError("a cosignature needs a timestamp between 1 and 2^63 - 1")
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = key.sign(cosigned_message(body, timestamp))
    return NoteSignature(
        name, cosigner_key_id(name, public), timestamp.to_bytes(8, "big") + signature
    )


def _valid(cosignature: Cosignature, key: CosignerKey, body: str) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(key.public_key).verify(
            cosignature.signature, cosigned_message(body, cosignature.timestamp)
        )
    except InvalidSignature:
        return False
    return True


def verify_cosignatures(note: str, keys: Sequence[CosignerKey]) -> list[Cosignature]:
    """The valid cosignatures on ``note`` by ``keys``, one per key at most.

    Lines from unknown keys are ignored (C2SP tlog-witness: the client MUST ignore them); a line
    that names a known key but does not verify raises ``VerificationError``.
    """
    text, signatures = parse_note(note)
    parse_checkpoint_body(text)
    found: dict[tuple[str, int], Cosignature] = {}
    for sig in signatures:
        key = next((k for k in keys if (k.name, k.key_id) == (sig.name, sig.key_id)), None)
        if key is None:
            continue
        cosignature = parse_cosignature(sig)
        if not _valid(cosignature, key, text):
            raise VerificationError(f"the cosignature of witness {key.name} does not verify")
        found.setdefault((key.name, key.key_id), cosignature)
    return list(found.values())


def valid_cosigners(note: str, keys: Sequence[CosignerKey]) -> dict[bytes, str]:
    """The distinct witness public keys (with a name each) whose cosignature on ``note``
    verifies. A line under a known name and key ID that does not verify counts for nothing and
    does not fail the note; two names over one public key count once (a cosignature does not
    sign its cosigner's name, so a relabelled line is the same witness)."""
    text, signatures = parse_note(note)
    parse_checkpoint_body(text)
    found: dict[bytes, str] = {}
    for sig in signatures:
        for key in keys:
            if (key.name, key.key_id) != (sig.name, sig.key_id) or key.public_key in found:
                continue
            try:
                if _valid(parse_cosignature(sig), key, text):
                    found[key.public_key] = key.name
            except VerificationError:
                continue
    return found


def witnessed_sizes(
    notes: Sequence[str], keys: Sequence[CosignerKey]
) -> list[tuple[int, tuple[str, ...]]]:
    """``(tree size, witness names)`` per checkpoint size among ``notes`` (one log's verified
    checkpoints), counting distinct witness public keys over every note of that size."""
    by_size: dict[int, dict[bytes, str]] = {}
    for note in notes:
        size = parse_checkpoint_body(parse_note(note)[0]).size
        by_size.setdefault(size, {}).update(valid_cosigners(note, keys))
    return sorted((size, tuple(sorted(found.values()))) for size, found in by_size.items())
