"""The signer's memory: the last checkpoint it signed per origin, kept outside the store.

A store holder without the signing key can rewrite, truncate or roll back the store, and delete
the checkpoints that would betray it. The signer must then refuse to sign the forged tree. So it
remembers, in a file beside the keyring (one file per origin), the last checkpoint it signed, and
signs a new one only after an RFC 9162 §2.1.4 consistency proof from the store shows that the
store's tree extends it (docs/design/journal.md, "Signer state").

The state is written durably with one fsync (two alternating slot files, each with a checksum:
a crash mid-write leaves the previous state whole), and the whole check-sign-remember step holds
an exclusive ``flock`` on a lock file beside it, so two processes signing for one origin (the
service and a CLI run) never interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from refusalkit._durable import SlotFile
from refusalkit.errors import StoreError, VerificationError
from refusalkit.journal._checkpoint import Checkpoint, parse_checkpoint_body
from refusalkit.journal._note import parse_note

__all__ = ["SIGNER_STATE_SCHEMA", "SignerState", "signer_state_dir"]

SIGNER_STATE_SCHEMA = "refusalkit.signer-state/v1"


def signer_state_dir(keyring_path: str | Path) -> Path:
    """Where the signer state of the keyring at ``keyring_path`` lives: a directory beside it."""
    path = Path(keyring_path)
    return path.with_name(f"{path.name}.signer")


@dataclass(frozen=True, slots=True)
class SignerState:
    """The state file of one origin in ``directory``: the last checkpoint signed for it."""

    directory: Path
    origin: str

    @property
    def path(self) -> Path:
        """``<directory>/<sha256(origin)[:16]>.json``, kept as the slots ``<path>.0`` and
        ``<path>.1`` (origins may hold '/')."""
        digest = hashlib.sha256(self.origin.encode("utf-8")).hexdigest()[:16]
        return self.directory / f"{digest}.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the origin's signing lock (an exclusive ``flock``) for a check-sign-save."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def load(self) -> tuple[Checkpoint, str] | None:
        """The last checkpoint signed for the origin and its note, or None when never."""
        text = SlotFile(self.path).read()
        if text is None:
            return None
        try:
            data = json.loads(text)
            note = str(data["note"])
            checkpoint = parse_checkpoint_body(parse_note(note)[0])
        except (ValueError, KeyError, TypeError, VerificationError) as exc:
            raise StoreError(
                f"the signer state {self.path} is unreadable: {exc}",
                hint="Restore it from a backup; never sign until it is back.",
            ) from exc
        if data.get("schema") != SIGNER_STATE_SCHEMA or checkpoint.origin != self.origin:
            raise StoreError(f"the signer state {self.path} is not for origin {self.origin!r}")
        return checkpoint, note

    def save(self, note: str) -> None:
        """Remember ``note`` as the last checkpoint signed (atomic and durable)."""
        body = {"schema": SIGNER_STATE_SCHEMA, "origin": self.origin, "note": note}
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        SlotFile(self.path).write(json.dumps(body, indent=2) + "\n")
