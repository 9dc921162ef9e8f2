"""Export bundles: a journal in one JSON file that an auditor verifies with nothing else.

Form ``refusalkit.journal-bundle/v1``: origin, verifier keys (C2SP ``name+id+base64``), the
entries (base64 of their exact bytes) and their leaf hashes (hex, to name a bad entry), every
signed checkpoint, and the consistency proofs
between successive checkpoints (RFC 9162 §2.1.4). ``verify_bundle`` recomputes the tree, checks
every checkpoint's signature and root, and checks each consistency proof with only its hashes.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal._checkpoint import Checkpoint, parse_checkpoint_body
from refusalkit.journal._note import NoteVerifier, parse_note
from refusalkit.journal._tree import verify_consistency
from refusalkit.journal._verify import LogSource, VerifyReport, verify_log

if TYPE_CHECKING:
    from refusalkit.journal._journal import Journal

__all__ = ["BUNDLE_SCHEMA", "export_bundle", "verify_bundle"]

BUNDLE_SCHEMA = "refusalkit.journal-bundle/v1"


def _consistency_chain(journal: Journal, notes: Sequence[str]) -> list[dict[str, Any]]:
    sizes = sorted({parse_checkpoint_body(parse_note(n)[0]).size for n in notes} - {0})
    return [journal.consistency_proof(a, b) for a, b in itertools.pairwise(sizes)]


def export_bundle(journal: Journal, out: str | Path) -> Path:
    """Write the journal as one bundle file; signs a checkpoint first if the tail is unsigned."""
    latest = journal.latest_checkpoint()
    if latest is None or parse_checkpoint_body(parse_note(latest)[0]).size != journal.size():
        journal.checkpoint()
    notes = journal.checkpoints()
    size = parse_checkpoint_body(parse_note(notes[-1])[0]).size
    target = Path(out)
    with target.open("w", encoding="utf-8") as handle:
        head = {
            "schema": BUNDLE_SCHEMA,
            "origin": journal.origin,
            "verifier_keys": sorted({v.vkey for v in journal.trusted()}),
            "size": size,
            "checkpoints": notes,
            "consistency": _consistency_chain(journal, notes),
        }
        handle.write(json.dumps(head)[:-1] + ', "entries": [')
        for start in range(0, size, 4096):
            chunk = journal.entries(start, min(size, start + 4096))
            text = ",".join(json.dumps(base64.b64encode(e).decode("ascii")) for e in chunk)
            handle.write(("," if start else "") + text)
        handle.write('], "leaf_hashes": [')
        leaves = ((h or b"").hex() for _, _, h, _ in journal.store.iter_entries(0, size))
        handle.write(",".join(f'"{h}"' for h in leaves))
        handle.write("]}\n")
    return target


def _load(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"no bundle at {path}") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VerificationError(f"{path} is not a journal bundle: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != BUNDLE_SCHEMA:
        raise VerificationError(f"{path} is not a {BUNDLE_SCHEMA} file")
    return data


def _entries(data: dict[str, Any]) -> Iterator[tuple[int, bytes]]:
    for index, text in enumerate(data.get("entries", [])):
        try:
            yield index, base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise VerificationError(f"bundle entry {index} is not base64", index=index) from exc


def _leaf_hashes(data: dict[str, Any]) -> Iterator[tuple[int, bytes]]:
    for index, text in enumerate(data.get("leaf_hashes", [])):
        yield index, bytes.fromhex(text)


def _check_proofs(data: dict[str, Any], roots: dict[int, Checkpoint]) -> None:
    for proof in data.get("consistency", []):
        old, new = roots.get(proof["old"]), roots.get(proof["new"])
        if old is None or new is None:
            raise VerificationError(
                f"consistency proof {proof['old']}->{proof['new']} has no checkpoint"
            )
        hashes = [bytes.fromhex(h) for h in proof["hashes"]]
        try:
            verify_consistency(old.size, new.size, hashes, old.root, new.root)
        except VerificationError as exc:
            raise VerificationError(exc.message, index=old.size) from exc


def verify_bundle(
    path: str | Path, *, trusted: Sequence[NoteVerifier] | None = None
) -> VerifyReport:
    """Verify a bundle offline; ``trusted`` pins the keys (default: the bundle's own keys).

    Raises ``VerificationError`` with the first bad index on any failure.
    """
    data = _load(path)
    try:
        keys = list(trusted) if trusted else [NoteVerifier.parse(v) for v in data["verifier_keys"]]
        entries = list(_entries(data))
        leaves = dict(_leaf_hashes(data))
        source = LogSource(
            size=int(data["size"]),
            entries=[(i, entry, leaves.get(i), None) for i, entry in entries],
            extra_entries=max(0, len(entries) - int(data["size"])),
            checkpoints=[str(n) for n in data["checkpoints"]],
            stored_nodes=False,
        )
        report = verify_log(source, str(data["origin"]), keys)
        roots = {
            c.size: c for c in (parse_checkpoint_body(parse_note(n)[0]) for n in source.checkpoints)
        }
        _check_proofs(data, roots)
    except (KeyError, TypeError, ValueError) as exc:
        raise VerificationError(f"{path} is not a well-formed journal bundle: {exc}") from exc
    return report
