"""Files that survive a crash whole: ``write_durably`` (rename-based) and ``SlotFile``.

Shared by the journal's signer state and the witness's state (docs/design/journal.md, "Signer
state"; docs/design/witness.md).

``SlotFile`` is a small record kept durably at the cost of one fsync: two slot files, written in
turn.

Each write goes to the slot holding the older record, in place (write, truncate, fsync), with a
sequence number and a SHA-256 of the body. A crash mid-write can only tear the slot being
written; reading takes the valid slot with the highest sequence number, so the previous record
is still there, whole. A rename-based replace needs a second fsync (the directory); this needs
one, except when a slot file is first created.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["DamagedStateError", "SlotFile", "write_durably"]


class DamagedStateError(Exception):
    """Slot files exist but none holds a whole record; callers turn it into their own error
    with the recovery that fits their state."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(f"{', '.join(paths)}: no slot passes its checksum")
        self.paths = paths


def write_durably(target: Path, text: str) -> None:
    """Replace ``target`` with ``text`` so that a crash leaves the old or the new file, whole:
    write a temporary file, fsync it, rename it over ``target``, fsync the directory."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class SlotFile:
    """Durable storage of one text record at ``base`` (``<base>.0`` and ``<base>.1``)."""

    __slots__ = ("paths",)

    def __init__(self, base: Path) -> None:
        self.paths = (base.with_name(base.name + ".0"), base.with_name(base.name + ".1"))

    def _read(self, path: Path) -> tuple[int, str] | None:
        """``(sequence, body)`` of a whole slot; None for a missing or torn one."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            body, seq = str(data["body"]), int(data["seq"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if hashlib.sha256(body.encode("utf-8")).hexdigest() != data.get("sha256"):
            return None
        return seq, body

    def read(self) -> str | None:
        """The latest record written whole, or None when no slot file exists at all.

        Slot files that exist but of which none is whole are damage, not absence: that raises
        ``DamagedStateError`` (fail closed), so state that guards against rollback is never
        silently read as "never written".
        """
        found = [slot for slot in map(self._read, self.paths) if slot is not None]
        if found:
            return max(found)[1]
        present = [str(path) for path in self.paths if path.exists()]
        if present:
            raise DamagedStateError(present)
        return None

    def write(self, body: str) -> None:
        """Durably replace the record with ``body`` (one fsync; two when a slot is created)."""
        slots = [self._read(path) for path in self.paths]
        seqs = [slot[0] if slot else -1 for slot in slots]
        target = self.paths[0] if seqs[0] <= seqs[1] else self.paths[1]
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        data = json.dumps({"seq": max(seqs) + 1, "sha256": digest, "body": body}).encode()
        created = not target.exists()
        fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            directory = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
