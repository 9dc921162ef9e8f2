"""The body of a C2SP tlog-witness ``add-checkpoint`` request: build it and parse it strictly.

An ``old <size>`` line, at most 63 base64 consistency-proof lines (32-byte hashes), an empty line,
then the signed checkpoint note. Every line ends in a newline; sizes are decimal without leading
zeroes (C2SP tlog-witness, "add-checkpoint").
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from refusalkit.errors import UsageError

__all__ = ["MAX_PROOF_LINES", "AddCheckpoint", "RequestFormatError"]

MAX_PROOF_LINES = 63
_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")


class RequestFormatError(UsageError):
    """An ``add-checkpoint`` body that breaks the spec's format (answered 400)."""


@dataclass(frozen=True, slots=True)
class AddCheckpoint:
    """One ``add-checkpoint`` request: old size, consistency proof, and the signed note."""

    old: int
    proof: tuple[bytes, ...]
    note: str

    def to_body(self) -> bytes:
        """The request body."""
        lines = [f"old {self.old}", *(base64.b64encode(h).decode("ascii") for h in self.proof)]
        return ("".join(f"{line}\n" for line in lines) + "\n" + self.note).encode("utf-8")

    @classmethod
    def parse(cls, body: bytes) -> AddCheckpoint:
        """Parse a request body; raises ``RequestFormatError`` naming what is wrong."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestFormatError("the body is not UTF-8") from exc
        head, sep, note = text.partition("\n\n")
        if not sep:
            raise RequestFormatError("no empty line between the proof and the checkpoint")
        lines = head.split("\n")
        if not lines[0].startswith("old ") or not _SIZE.fullmatch(lines[0][4:]):
            raise RequestFormatError(f"the first line {lines[0][:40]!r} is not 'old <size>'")
        if len(lines) - 1 > MAX_PROOF_LINES:
            raise RequestFormatError(f"more than {MAX_PROOF_LINES} consistency proof lines")
        return cls(int(lines[0][4:]), tuple(_hash(line) for line in lines[1:]), note)


def _hash(line: str) -> bytes:
    try:
        digest = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RequestFormatError(f"proof line {line[:60]!r} is not base64") from exc
    if len(digest) != 32:
        raise RequestFormatError(f"proof line {line[:60]!r} is not a 32-byte hash")
    return digest
