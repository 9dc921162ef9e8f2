"""Offline checks of what a journal's service hands out: checkpoint files and bare proofs.

A checkpoint file is a signed note as ``journal checkpoint --out`` writes it, the JSON the
service answers at ``GET /v1/journal/checkpoint`` (its ``checkpoint`` field), or a bundle (its
latest checkpoint). A proof file is the JSON of ``GET /v1/journal/proof/inclusion`` (RFC 9162
§2.1.3) or ``/proof/consistency`` (§2.1.4); ``verify_proof`` checks it against signed checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal._bundle import BUNDLE_SCHEMA
from refusalkit.journal._checkpoint import Checkpoint, open_checkpoint
from refusalkit.journal._note import NoteVerifier
from refusalkit.journal._tree import verify_consistency, verify_inclusion

__all__ = ["read_checkpoint_file", "verify_proof"]


def read_checkpoint_file(path: str | Path) -> str:
    """The signed note in ``path`` (a note, the service's checkpoint JSON, or a bundle)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read checkpoint file {path}: {exc.strerror}") from exc
    if not text.lstrip().startswith("{"):
        return text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerificationError(f"{path} is neither a signed note nor JSON: {exc.msg}") from exc
    if isinstance(data, dict) and data.get("schema") == BUNDLE_SCHEMA and data.get("checkpoints"):
        return str(data["checkpoints"][-1])
    if isinstance(data, dict) and isinstance(data.get("checkpoint"), str):
        return str(data["checkpoint"])
    raise VerificationError(
        f"{path} holds no checkpoint",
        hint="Give a signed note (journal checkpoint --out), the service's checkpoint JSON, "
        "or a bundle.",
    )


def _hashes(proof: Mapping[str, Any]) -> list[bytes]:
    try:
        return [bytes.fromhex(str(h)) for h in proof["hashes"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise VerificationError(f"the proof's hashes are not a list of hex: {exc}") from exc


def _at_size(checkpoints: Sequence[Checkpoint], size: int, what: str) -> Checkpoint:
    found = next((c for c in checkpoints if c.size == size), None)
    if found is None:
        sizes = ", ".join(str(c.size) for c in checkpoints) or "none"
        raise VerificationError(
            f"the proof is for {what} size {size}, but the checkpoints given have size {sizes}",
            hint="Pass the checkpoint of that size (--checkpoint FILE), or ask the service for "
            "a proof at the checkpoint's size.",
        )
    return found


def verify_proof(
    proof: Mapping[str, Any], notes: Sequence[str], trusted: Sequence[NoteVerifier]
) -> str:
    """Check an inclusion or consistency proof against signed checkpoints; says what it proved.

    Every note must be signed by a ``trusted`` key (``UntrustedKeyError`` names both sides).
    """
    checkpoints = [open_checkpoint(note, trusted) for note in notes]
    try:
        if "leaf_hash" in proof:
            index, size = int(proof["index"]), int(proof["tree_size"])
            cp = _at_size(checkpoints, size, "tree")
            leaf = bytes.fromhex(str(proof["leaf_hash"]))
            verify_inclusion(index, size, leaf, _hashes(proof), cp.root)
            return f"entry {index} (leaf {leaf.hex()}) is in {cp.origin} at size {size}"
        old, new = int(proof["old"]), int(proof["new"])
    except (KeyError, TypeError, ValueError) as exc:
        raise VerificationError(f"not an RFC 9162 proof: bad or missing {exc}") from exc
    first, second = _at_size(checkpoints, old, "old"), _at_size(checkpoints, new, "new")
    verify_consistency(old, new, _hashes(proof), first.root, second.root)
    return f"{first.origin} at size {new} extends its checkpoint of size {old}"
