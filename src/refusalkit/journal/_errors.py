"""The journal's trust failures, each told apart from plain tampering (docs/design/journal.md).

All are ``VerificationError`` (exit 1): something could not be trusted. ``UntrustedKeyError`` says
the checkpoint is signed, just not by a key the caller passed (often the wrong keyring);
``NotAnExtensionError`` says a tree does not extend a checkpoint someone trusted (the signer's
refusal, or an anchored verify); ``EquivocationError`` holds two signed checkpoints of one origin
that cannot both be true, as evidence anyone can check.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from refusalkit.errors import VerificationError

if TYPE_CHECKING:
    from refusalkit.journal._checkpoint import Checkpoint

__all__ = ["EquivocationError", "Evidence", "NotAnExtensionError", "UntrustedKeyError"]


class UntrustedKeyError(VerificationError):
    """A checkpoint signed by a key the caller did not pass: not tampering, a key mismatch."""

    def __init__(
        self, what: str, signers: Sequence[str], passed: Sequence[str], *, verb: str = "is"
    ) -> None:
        self.signers = tuple(signers)
        self.passed = tuple(passed)
        super().__init__(
            f"{what} {verb} signed by a key you did not pass: signed by "
            f"{', '.join(self.signers) or 'nobody'}; you passed {', '.join(self.passed) or 'none'}",
            hint="This is a key mismatch, not tampering: pass the log's verifier key "
            "(`refusalkit journal public-key STORE --keyring KEYRING` with the keyring that "
            "signed it) as --public-key, or the keyring that signed the journal as --keyring.",
        )


class NotAnExtensionError(VerificationError):
    """A tree that does not extend a trusted checkpoint (truncated, rolled back or forked)."""

    default_hint = (
        "Sign nothing and treat the store as tampered with: compare it with a backup and with "
        "the checkpoints others hold (`refusalkit journal verify STORE --trusted-checkpoint F`)."
    )


def _b64(root: bytes) -> str:
    return base64.b64encode(root).decode("ascii")


@dataclass(frozen=True, slots=True)
class Evidence:
    """Two signed checkpoints of one origin that no append-only log can both have produced.

    ``proof`` (hex, RFC 9162 §2.1.4) is a consistency proof from ``first``'s size within the tree
    of ``second``; ``implied_root`` is the root of that size it leads to, which differs from
    ``first``'s. Empty when the sizes are equal (the roots alone differ).
    """

    first: tuple[Checkpoint, str]
    second: tuple[Checkpoint, str]
    proof: tuple[str, ...] = ()
    implied_root: bytes | None = None

    def render(self) -> str:
        """Self-contained text: both notes, both sizes and roots, and the proof."""
        (a, note_a), (b, note_b) = self.first, self.second
        lines = [
            (
                f"equivocation by the signer of {a.origin!r}: two signed checkpoints that no "
                "append-only log can both have produced"
            ),
            f"checkpoint A: size {a.size}, root {_b64(a.root)}",
            f"checkpoint B: size {b.size}, root {_b64(b.root)}",
        ]
        if self.implied_root is not None:
            lines.append(
                f"in the tree of B, the first {a.size} entries have root "
                f"{_b64(self.implied_root)}; consistency proof {a.size}->{b.size} (hex): "
                f"{' '.join(self.proof) or '(empty)'}"
            )
        lines += ["--- note A ---", note_a.rstrip("\n"), "--- note B ---", note_b.rstrip("\n")]
        return "\n".join(lines) + "\n"


class EquivocationError(VerificationError):
    """Two validly signed checkpoints of one origin that are not consistent; ``evidence`` says."""

    def __init__(self, evidence: Evidence, *, index: int | None = None) -> None:
        self.evidence = evidence
        (a, _), (b, _) = evidence.first, evidence.second
        super().__init__(
            f"equivocation: two signed checkpoints of {a.origin!r} are not consistent "
            f"(size {a.size} root {_b64(a.root)}; size {b.size} root {_b64(b.root)})",
            index=index,
            hint="The signing key signed two histories: keep both notes (printed above) as "
            "evidence, rotate the key, and trust neither history without a witness quorum.",
        )
