"""C2SP tlog-checkpoint bodies (c2sp.org/tlog-checkpoint), signed as C2SP signed notes.

The body is three lines: the origin, the tree size in decimal, and the base64 RFC 9162 root hash;
optional extension lines follow. The journal signs with its origin as the key name, as the spec
recommends, so one verifier key string identifies both.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from refusalkit.errors import VerificationError
from refusalkit.journal._errors import UntrustedKeyError
from refusalkit.journal._note import NoteSignature, NoteVerifier, open_note, parse_note, sign_note
from refusalkit.journal._tree import HASH_SIZE

__all__ = [
    "Checkpoint",
    "open_checkpoint",
    "parse_checkpoint_body",
    "require_trusted_signer",
    "sign_checkpoint",
]

_SIZE = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A log's tree head: origin, size and RFC 9162 root hash (plus opaque extension lines)."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def body(self) -> str:
        """The note text: origin, size, base64 root, extensions, each ending in a newline."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode("ascii")]
        return "".join(f"{line}\n" for line in [*lines, *self.extensions])


def _bad(why: str) -> VerificationError:
    return VerificationError(f"not a checkpoint: {why}", hint="See c2sp.org/tlog-checkpoint.")


def parse_checkpoint_body(text: str) -> Checkpoint:
    """Parse a checkpoint note text (c2sp.org/tlog-checkpoint, 'Note text')."""
    if not text.endswith("\n"):
        raise _bad("the text does not end in a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not lines[0] or any(not line for line in lines[3:]):
        raise _bad("it needs an origin, a size and a root hash line, and no empty lines")
    if not _SIZE.fullmatch(lines[1]):
        raise _bad(f"tree size {lines[1]!r} is not a decimal number without leading zeros")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except ValueError as exc:
        raise _bad("the root hash is not base64") from exc
    if len(root) != HASH_SIZE:
        raise _bad(f"the root hash has {len(root)} bytes, not {HASH_SIZE}")
    return Checkpoint(lines[0], int(lines[1]), root, tuple(lines[3:]))


def sign_checkpoint(checkpoint: Checkpoint, key: Ed25519PrivateKey, name: str | None = None) -> str:
    """The checkpoint as a signed note, signed under ``name`` (default: the origin)."""
    return sign_note(checkpoint.body(), name or checkpoint.origin, key)


def open_checkpoint(
    note: str | bytes, verifiers: Sequence[NoteVerifier], *, origin: str | None = None
) -> Checkpoint:
    """Verify a signed checkpoint and parse it; with ``origin``, the origin line must match.

    A note that no passed key signed raises ``UntrustedKeyError`` (a key mismatch, naming both
    sides' key IDs); a passed key's signature that fails raises ``VerificationError`` (tampering).
    """
    text, signatures = parse_note(note)
    checkpoint = parse_checkpoint_body(text)
    if origin is not None and checkpoint.origin != origin:
        raise VerificationError(
            f"checkpoint is from origin {checkpoint.origin!r}, not {origin!r}",
            hint="This checkpoint belongs to another log.",
        )
    require_trusted_signer("checkpoint", signatures, verifiers)
    open_note(note, verifiers)
    return checkpoint


def require_trusted_signer(
    what: str, signatures: Sequence[NoteSignature], verifiers: Sequence[NoteVerifier]
) -> None:
    """Raise ``UntrustedKeyError`` unless some signature line names a passed key (name and ID)."""
    passed = {(v.name, v.key_id) for v in verifiers}
    if not any((s.name, s.key_id) in passed for s in signatures):
        raise UntrustedKeyError(
            what,
            sorted({f"{s.name}+{s.key_id:08x}" for s in signatures}),
            sorted({f"{v.name}+{v.key_id:08x}" for v in verifiers}),
        )
