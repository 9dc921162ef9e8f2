"""The journal: a tamper-evident transparency log of refusal records (docs/design/journal.md).

An RFC 9162 Merkle tree over the RFC 8785 bytes of each record, with C2SP ``tlog-checkpoint``
checkpoints signed as C2SP ``signed-note``s (Ed25519), inclusion and consistency proofs, receipts
checkable offline, and stores for SQLite (default, one file) and PostgreSQL (several writers)::

    with open_journal("journal.db", keyring) as journal:
        [index] = journal.append([decision.to_dict()])
        journal.checkpoint()
        receipt = journal.receipt(index)
        journal.verify()
    verify_receipt(decision.to_dict(), receipt, public_key=keyring.public_key_bytes())

``JournalAccess`` is the asynchronous face of one store for a long-running process (the HTTP
service, the MCP proxy): group-committed appends on a writer thread and reads off the event loop;
``CheckpointScheduler`` signs checkpoints on a schedule through it.
"""

from __future__ import annotations

from refusalkit.journal._access import Entry, Handoff, JournalAccess
from refusalkit.journal._bundle import bundle_checkpoints, export_bundle, verify_bundle
from refusalkit.journal._checkpoint import Checkpoint, open_checkpoint, parse_checkpoint_body
from refusalkit.journal._errors import (
    EquivocationError,
    Evidence,
    NotAnExtensionError,
    UntrustedKeyError,
)
from refusalkit.journal._journal import Journal, open_journal
from refusalkit.journal._note import (
    NoteSignature,
    NoteVerifier,
    OpenedNote,
    open_note,
    parse_note,
    valid_key_name,
)
from refusalkit.journal._offline import read_checkpoint_file, verify_proof
from refusalkit.journal._receipt import Receipt, verify_receipt
from refusalkit.journal._records import decision_fields
from refusalkit.journal._schedule import CheckpointScheduler, Cosigner, sign_if_grown
from refusalkit.journal._signer_state import known_origins, signer_state_dir
from refusalkit.journal._tiles import (
    TilesReport,
    export_tiles,
    parse_tile_path,
    read_tile,
    tile_path,
)
from refusalkit.journal._time import normalise_time
from refusalkit.journal._tree import leaf_hash, verify_consistency, verify_inclusion
from refusalkit.journal._verify import VerifyReport

__all__ = [
    "Checkpoint",
    "CheckpointScheduler",
    "Cosigner",
    "Entry",
    "EquivocationError",
    "Evidence",
    "Handoff",
    "Journal",
    "JournalAccess",
    "NotAnExtensionError",
    "NoteSignature",
    "NoteVerifier",
    "OpenedNote",
    "Receipt",
    "TilesReport",
    "UntrustedKeyError",
    "VerifyReport",
    "bundle_checkpoints",
    "decision_fields",
    "export_bundle",
    "export_tiles",
    "known_origins",
    "leaf_hash",
    "normalise_time",
    "open_checkpoint",
    "open_journal",
    "open_note",
    "parse_checkpoint_body",
    "parse_note",
    "parse_tile_path",
    "read_checkpoint_file",
    "read_tile",
    "sign_if_grown",
    "signer_state_dir",
    "tile_path",
    "valid_key_name",
    "verify_bundle",
    "verify_consistency",
    "verify_inclusion",
    "verify_proof",
    "verify_receipt",
]
