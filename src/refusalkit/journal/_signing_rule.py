"""The rule for signing a checkpoint: a pure function over a typed proof (docs/design/journal.md,
"Signer state").

Everything the rule looks at is gathered first, by I/O around it (the store, the signer state
beside the keyring), into a ``SigningProof``; ``check_signing`` then reads nothing and writes
nothing: it raises the reason not to sign, or returns. The rule, in order:

1. The keyring must hold a key that signed the store before (when any did): a process started
   with another keyring refuses, naming both key IDs.
2. The origin must be one the keyring created or adopted: a store rebuilt under a look-alike
   origin is refused (``--new-origin`` adopts one explicitly).
3. A store that says it was signed needs an anchor: the signer's last checkpoint for the origin,
   or (``--adopt``, after a full verify) the store's own.
4. The store's tree must extend the anchor: an RFC 9162 §2.1.4 consistency proof from the
   anchor's size to the head's.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from refusalkit.errors import KeyringError, StoreError, VerificationError
from refusalkit.journal._checkpoint import Checkpoint
from refusalkit.journal._errors import NotAnExtensionError
from refusalkit.journal._tree import verify_consistency

__all__ = ["AnchorSource", "SigningProof", "anchor_label", "check_keyring", "check_signing"]


class AnchorSource(enum.StrEnum):
    """Where the checkpoint a new one must extend came from."""

    NONE = "none"  # the log was never signed
    SIGNER_STATE = "signer-state"  # the signer's own memory (the normal case)
    ADOPTED = "adopted"  # the store's latest, adopted by the operator after a full verify
    STORE = "store"  # the store's latest (a library caller that keeps no signer state)


@dataclass(frozen=True, slots=True)
class SigningProof:
    """What the signing rule decides on; every field is gathered before it runs.

    ``known_origins`` is None when no signer state is kept (a library caller without one: the
    origin check is then the caller's). ``store_keys`` / ``own_keys`` are C2SP verifier keys
    (``name+hexid+base64``); ``consistency`` proves ``anchor`` -> ``head`` when both are set.
    """

    head: Checkpoint
    anchor: Checkpoint | None
    anchor_source: AnchorSource
    consistency: tuple[bytes, ...]
    known_origins: tuple[str, ...] | None
    store_signed_before: bool
    store_keys: tuple[str, ...]
    own_keys: tuple[str, ...]


def _key_ids(vkeys: Sequence[str]) -> str:
    return ", ".join(sorted("+".join(vkey.split("+", 2)[:2]) for vkey in vkeys)) or "none"


def check_keyring(origin: str, store_keys: Sequence[str], own_keys: Sequence[str]) -> None:
    """Raise ``KeyringError`` naming both key IDs unless the keyring holds a key that signed the
    store before (or none ever did). Pure."""
    if store_keys and not set(store_keys) & set(own_keys):
        raise KeyringError(
            f"this keyring's signing key ({_key_ids(own_keys)}) is not the key that "
            f"signed journal {origin!r} ({_key_ids(store_keys)}); refusing to "
            "append or sign",
            hint="Use the keyring that signed it (--keyring or $REFUSALKIT_KEYRING). To move "
            "the log to a new key, rotate inside that keyring: `refusalkit keys rotate "
            "KEYRING --signing` keeps the old key for verification.",
        )


def _check_origin(proof: SigningProof) -> None:
    known = proof.known_origins
    if known is None or proof.head.origin in known:
        return
    listed = ", ".join(repr(o) for o in known) or "none yet"
    raise StoreError(
        f"refusing to sign origin {proof.head.origin!r}: this keyring did not create or adopt "
        f"it (its origins: {listed})",
        hint="A store rebuilt under a look-alike origin looks like this; compare the origin "
        "character by character. Only if this log is yours: `refusalkit journal checkpoint "
        "STORE --new-origin` adopts it.",
    )


def _check_anchor(proof: SigningProof) -> None:
    if proof.anchor is None and proof.store_signed_before:
        raise StoreError(
            f"the signer has no state for {proof.head.origin!r} but the store says this "
            "journal was signed before",
            hint="Restore the signer state from a backup. Only if you trust the store as it "
            "is: `refusalkit journal checkpoint STORE --adopt` adopts its latest checkpoint "
            "after a full verify.",
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _check_extension(proof: SigningProof) -> None:
    anchor, head = proof.anchor, proof.head
    if anchor is None:
        return
    why = "the tree is smaller" if head.size < anchor.size else ""
    if not why and anchor.origin != head.origin:
        why = f"the anchor is of origin {anchor.origin!r}"
    if not why and anchor.size:
        try:
            verify_consistency(
                anchor.size, head.size, list(proof.consistency), anchor.root, head.root
            )
        except VerificationError as exc:
            why = exc.message
    if why:
        raise NotAnExtensionError(
            f"refusing to sign: the store's tree (size {head.size}, root {_b64(head.root)}) "
            f"does not extend the last checkpoint signed for {head.origin!r} (size "
            f"{anchor.size}, root {_b64(anchor.root)}, from the {anchor_label(proof)}): {why}",
            index=min(anchor.size, head.size),
        )


def anchor_label(proof: SigningProof) -> str:
    """Where the anchor came from, for messages."""
    return {
        AnchorSource.SIGNER_STATE: "signer state",
        AnchorSource.ADOPTED: "adopted store checkpoint",
        AnchorSource.STORE: "store",
        AnchorSource.NONE: "nothing",
    }[proof.anchor_source]


def check_signing(proof: SigningProof) -> None:
    """Raise the reason not to sign ``proof.head``; return when it may be signed.

    Pure: decides on ``proof`` alone (``KeyringError``, ``StoreError`` or
    ``NotAnExtensionError``).
    """
    check_keyring(proof.head.origin, proof.store_keys, proof.own_keys)
    _check_origin(proof)
    _check_anchor(proof)
    _check_extension(proof)
