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
from refusalkit.journal._errors import UntrustedKeyError
from refusalkit.journal._note import NoteVerifier, parse_note
from refusalkit.journal._tree import verify_consistency
from refusalkit.journal._verify import LogSource, VerifyReport, verify_log

if TYPE_CHECKING:
    from refusalkit.journal._journal import Journal

__all__ = ["BUNDLE_SCHEMA", "bundle_checkpoints", "export_bundle", "verify_bundle"]

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


def _signers(notes: Sequence[str]) -> set[tuple[str, int]]:
    """``(key name, key ID)`` of every signature line on the notes (unverified)."""
    found: set[tuple[str, int]] = set()
    for note in notes:
        try:
            found |= {(s.name, s.key_id) for s in parse_note(note)[1]}
        except VerificationError:
            continue
    return found


def _require_trusted_signer(notes: Sequence[str], keys: Sequence[NoteVerifier]) -> None:
    """Refuse a bundle no trusted key signed anything of, with a hint to pin the right key."""
    trusted = {(k.name, k.key_id) for k in keys}
    signers = _signers(notes)
    if notes and not signers & trusted:
        raise UntrustedKeyError(
            "the bundle's checkpoints",
            sorted(f"{n}+{i:08x}" for n, i in signers),
            sorted(f"{k.name}+{k.key_id:08x}" for k in keys),
            verb="are",
        )


def _require_final_checkpoint(path: str | Path, report: VerifyReport) -> None:
    """A bundle must carry a trusted checkpoint of its own size (export always writes one):
    otherwise its entries, and the leaf hashes beside them, vouch only for themselves."""
    if report.checkpoints == 0 or report.latest_checkpoint_size != report.size:
        raise VerificationError(
            f"{path} has no checkpoint signed by a trusted key for its size {report.size} "
            f"(latest verified: {report.latest_checkpoint_size if report.checkpoints else 'none'})",
            index=report.latest_checkpoint_size,
            hint="Ask the log's operator for a fresh export (`refusalkit journal export`).",
        )


def _keys(
    data: dict[str, Any],
    trusted: Sequence[NoteVerifier] | None,
    public_keys: Sequence[bytes] | None,
) -> list[NoteVerifier]:
    """The verifiers to trust: ``trusted``, else ``public_keys`` under the bundle's origin, else
    the bundle's own keys."""
    if trusted:
        return list(trusted)
    if public_keys:
        return [NoteVerifier.for_key(str(data["origin"]), key) for key in public_keys]
    return [NoteVerifier.parse(v) for v in data["verifier_keys"]]


def bundle_checkpoints(path: str | Path) -> list[str]:
    """The signed checkpoints a bundle carries (with any cosignatures), oldest first; unverified."""
    data = _load(path)
    notes = data.get("checkpoints", [])
    if not isinstance(notes, list):
        raise VerificationError(f"{path} is not a well-formed journal bundle: bad checkpoints")
    return [str(n) for n in notes]


def verify_bundle(
    path: str | Path,
    *,
    trusted: Sequence[NoteVerifier] | None = None,
    public_keys: Sequence[bytes] | None = None,
    anchors: Sequence[tuple[str, str]] = (),
) -> VerifyReport:
    """Verify a bundle offline against the keys you trust.

    ``trusted`` pins verifier keys; ``public_keys`` (raw Ed25519) pins keys under the bundle's
    origin; with neither, the bundle's own keys are used, which proves only that the bundle is
    self-consistent, not who wrote it. The bundle must carry a checkpoint of its full size
    signed by a trusted key. ``anchors`` are ``(label, signed note)`` checkpoints held from
    before (``--trusted-checkpoint``), which the bundle's log must extend. Raises
    ``VerificationError`` with the first bad index on any failure.
    """
    data = _load(path)
    try:
        keys = _keys(data, trusted, public_keys)
        notes = [str(n) for n in data.get("checkpoints", [])]
        _require_trusted_signer(notes, keys)
        entries = list(_entries(data))
        leaves = dict(_leaf_hashes(data))
        source = LogSource(
            size=int(data["size"]),
            entries=[(i, entry, leaves.get(i), None) for i, entry in entries],
            extra_entries=max(0, len(entries) - int(data["size"])),
            checkpoints=notes,
            stored_nodes=False,
            anchors=anchors,
        )
        report = verify_log(source, str(data["origin"]), keys)
        _require_final_checkpoint(path, report)
        roots = {c.size: c for c in (parse_checkpoint_body(parse_note(n)[0]) for n in notes)}
        _check_proofs(data, roots)
    except (KeyError, TypeError, ValueError) as exc:
        raise VerificationError(f"{path} is not a well-formed journal bundle: {exc}") from exc
    return report
