"""C2SP signed-note (c2sp.org/signed-note) with Ed25519 signatures (signature type 0x01).

A note is UTF-8 text ending in a newline, a blank line, then signature lines
``— <key name> base64(key ID || signature)``. The key ID is the first four bytes of
``SHA-256(key name || 0x0A || 0x01 || public key)``. Verification follows the spec: signatures from
unknown keys (name and ID not both known) are ignored, a known key's signature must verify, and at
least one trusted signature must verify. Verifier keys use the ``name+hexid+base64(0x01||key)``
form of golang.org/x/mod/sumdb/note, so any C2SP tool can read them.
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

__all__ = [
    "NoteSignature",
    "NoteVerifier",
    "OpenedNote",
    "key_id",
    "open_note",
    "parse_note",
    "sign_note",
]

ED25519 = 0x01
MAX_SIGNATURES = 100  # golang.org/x/mod/sumdb/note's limit; the spec asks for at least 16
_DASH = "\u2014 "
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")
_HEX8 = re.compile(r"[0-9a-f]{8}")


def valid_key_name(name: str) -> bool:
    """Key names are non-empty, without Unicode spaces, plus signs or control characters."""
    return (
        bool(name)
        and "+" not in name
        and not any(c.isspace() for c in name)
        and not (_CONTROL.search(name))
    )


def key_id(name: str, public_key: bytes) -> int:
    """``SHA-256(name || 0x0A || 0x01 || public key)[:4]`` as a big-endian uint32."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True, slots=True)
class NoteVerifier:
    """A trusted Ed25519 key: its name, key ID and 32 raw public key bytes."""

    name: str
    key_id: int
    public_key: bytes

    @classmethod
    def for_key(cls, name: str, public_key: bytes) -> NoteVerifier:
        """The verifier of ``public_key`` under ``name``, with the spec's key ID."""
        if not valid_key_name(name):
            raise UsageError(f"{name!r} is not a valid signed-note key name (no spaces or '+')")
        if len(public_key) != 32:
            raise UsageError(f"an Ed25519 public key has 32 bytes, not {len(public_key)}")
        return cls(name, key_id(name, public_key), bytes(public_key))

    @classmethod
    def parse(cls, vkey: str) -> NoteVerifier:
        """Parse a verifier key ``name+hexid+base64(0x01 || key)``; the ID must match the key."""
        parts = vkey.strip().split("+", 2)
        if len(parts) != 3 or not valid_key_name(parts[0]) or not _HEX8.fullmatch(parts[1]):
            raise VerificationError(
                f"{vkey!r} is not a verifier key", hint="Expected NAME+HEXID+BASE64 (C2SP note)."
            )
        raw = _b64decode(parts[2], "verifier key")
        if len(raw) != 33 or raw[0] != ED25519:
            raise VerificationError(f"verifier key {parts[0]} is not an Ed25519 (type 0x01) key")
        verifier = cls.for_key(parts[0], raw[1:])
        if f"{verifier.key_id:08x}" != parts[1]:
            raise VerificationError(f"verifier key {parts[0]}: key ID does not match the key")
        return verifier

    @property
    def vkey(self) -> str:
        """The verifier key string ``name+hexid+base64(0x01 || key)``."""
        material = base64.b64encode(bytes([ED25519]) + self.public_key).decode("ascii")
        return f"{self.name}+{self.key_id:08x}+{material}"

    def verify(self, text: bytes, signature: bytes) -> bool:
        """Check an Ed25519 signature (RFC 8032) over the note text."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, text)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: key name, key ID and the signature bytes after the ID."""

    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        """The signature line ``— NAME base64(key ID || signature)`` with its newline."""
        blob = base64.b64encode(self.key_id.to_bytes(4, "big") + self.signature).decode("ascii")
        return f"{_DASH}{self.name} {blob}\n"


@dataclass(frozen=True, slots=True)
class OpenedNote:
    """A note whose text a trusted key vouched for."""

    text: str
    verified: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...]


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise VerificationError(f"{what} is not valid base64") from exc


def _malformed(why: str) -> VerificationError:
    return VerificationError(
        f"malformed signed note: {why}",
        hint="A signed note is text, a blank line, then '\u2014 NAME BASE64' lines "
        "(c2sp.org/signed-note).",
    )


def _parse_signature_line(line: str) -> NoteSignature:
    if not line.startswith(_DASH):
        raise _malformed(f"signature line {line[:40]!r} does not start with an em dash")
    fields = line[len(_DASH) :].split(" ")
    if len(fields) != 2 or not valid_key_name(fields[0]):
        raise _malformed(f"signature line {line[:40]!r} is not '\u2014 NAME BASE64'")
    raw = _b64decode(fields[1], f"signature of {fields[0]}")
    if len(raw) < 5:
        raise _malformed(f"signature of {fields[0]} is too short")
    return NoteSignature(fields[0], int.from_bytes(raw[:4], "big"), raw[4:])


def parse_note(note: str | bytes) -> tuple[str, list[NoteSignature]]:
    """Split a signed note into its text (with final newline) and its signatures, unverified."""
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _malformed("not valid UTF-8") from exc
    if _CONTROL.search(note):
        raise _malformed("control characters other than newline")
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise _malformed("no blank line before the signatures, or no final newline")
    text, lines = note[: split + 1], note[split + 2 : -1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise _malformed(f"more than {MAX_SIGNATURES} signatures")
    return text, [_parse_signature_line(line) for line in lines]


def sign_note(text: str, name: str, key: Ed25519PrivateKey) -> str:
    """Sign ``text`` (ending in a newline) as a one-signature note under key ``name``."""
    if not text.endswith("\n") or "\n\n" in text or _CONTROL.search(text):
        raise UsageError("note text must end in a newline, with no blank lines or control chars")
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    verifier = NoteVerifier.for_key(name, public)
    signature = key.sign(text.encode("utf-8"))
    blob = base64.b64encode(verifier.key_id.to_bytes(4, "big") + signature).decode("ascii")
    return f"{text}\n{_DASH}{name} {blob}\n"


def _match(sig: NoteSignature, verifiers: Sequence[NoteVerifier]) -> NoteVerifier | None:
    found = [v for v in verifiers if v.name == sig.name and v.key_id == sig.key_id]
    if len(found) > 1:
        raise VerificationError(f"ambiguous key {sig.name}+{sig.key_id:08x}: two trusted keys")
    return found[0] if found else None


def open_note(note: str | bytes, verifiers: Sequence[NoteVerifier]) -> OpenedNote:
    """Verify a signed note against trusted keys; returns its text only if one of them signed it.

    Unknown signatures are ignored; a known key whose signature fails rejects the whole note.
    """
    text, signatures = parse_note(note)
    payload = text.encode("utf-8")
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    for sig in signatures:
        verifier = _match(sig, verifiers)
        if verifier is None:
            if sig not in unverified:
                unverified.append(sig)
        elif not verifier.verify(payload, sig.signature):
            raise VerificationError(f"invalid signature for key {sig.name}+{sig.key_id:08x}")
        elif sig not in verified:
            verified.append(sig)
    if not verified:
        names = ", ".join(sorted({f"{s.name}+{s.key_id:08x}" for s in signatures}))
        raise VerificationError(
            f"note has no signature by a trusted key (signed by: {names or 'nobody'})",
            hint="Check that you trust the right public key for this journal.",
        )
    return OpenedNote(text, tuple(verified), tuple(unverified))
