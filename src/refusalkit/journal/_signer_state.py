"""The signer's state, kept beside the keyring and never in the store: which origins the keyring
created or adopted, and the last checkpoint it signed for each (docs/design/journal.md, "Signer
state").

A store holder without the signing key can rewrite, truncate or roll back the store, delete the
checkpoints that would betray it, or rebuild it under a look-alike origin. The signer must then
refuse to sign the forged tree. So it remembers, in files beside the keyring:

- ``origins.json``: every origin this keyring created (a journal opened with refusalkit) or the
  operator adopted (``--new-origin``); a store under any other origin gets no signature;
- ``<sha256(origin)[:16]>.json``: per origin, the last checkpoint signed, which a new checkpoint
  must extend (RFC 9162 §2.1.4).

Each is written durably with one fsync (two alternating slot files, each with a checksum: a crash
mid-write leaves the previous state whole). Slot files of which none verifies are damage, and
fail closed: nothing is signed until the operator recovers (``--adopt`` after review). The whole
check-sign-remember step holds an exclusive ``flock`` on a lock file beside it, so two processes
signing for one origin (the service and a CLI run) never interleave.

This module holds state and its I/O only; the rule that decides whether to sign is the pure
function ``refusalkit.journal._signing_rule.check_signing``.
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

from refusalkit._durable import DamagedStateError, SlotFile
from refusalkit.errors import StoreError, VerificationError
from refusalkit.journal._checkpoint import Checkpoint, parse_checkpoint_body
from refusalkit.journal._note import parse_note

__all__ = [
    "KNOWN_ORIGINS_SCHEMA",
    "SIGNER_STATE_SCHEMA",
    "KnownOrigins",
    "SignerState",
    "known_origins",
    "signer_state_dir",
]

SIGNER_STATE_SCHEMA = "refusalkit.signer-state/v1"
KNOWN_ORIGINS_SCHEMA = "refusalkit.signer-origins/v1"


def signer_state_dir(keyring_path: str | Path) -> Path:
    """Where the signer state of the keyring at ``keyring_path`` lives: a directory beside it."""
    path = Path(keyring_path)
    return path.with_name(f"{path.name}.signer")


def known_origins(keyring_path: str | Path) -> tuple[str, ...]:
    """The origins the keyring at ``keyring_path`` created or adopted (from its signer state):
    what its keys vouch for, whatever a store says its origin is."""
    return KnownOrigins(signer_state_dir(keyring_path)).origins()


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _damaged(what: str, exc: DamagedStateError) -> StoreError:
    return StoreError(
        f"the signer state is damaged: {what} {exc}",
        hint="Nothing is signed until it is repaired. Restore the directory from a backup; or, "
        "after reviewing the store, `refusalkit journal checkpoint STORE --adopt` verifies it "
        "fully and adopts its latest checkpoint (state files are rewritten).",
    )


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

    @property
    def known(self) -> KnownOrigins:
        """The registry of origins of the same keyring."""
        return KnownOrigins(self.directory)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the origin's signing lock (an exclusive ``flock``) for a check-sign-save."""
        with _flock(self.path.with_suffix(".lock")):
            yield

    def load(self) -> tuple[Checkpoint, str] | None:
        """The last checkpoint signed for the origin and its note, or None when never.

        Slot files that exist but do not verify raise ``StoreError`` (fail closed).
        """
        try:
            text = SlotFile(self.path).read()
        except DamagedStateError as exc:
            raise _damaged(f"origin {self.origin!r}:", exc) from exc
        if text is None:
            return None
        return _parse_state(self.path, text, self.origin)

    def save(self, note: str) -> None:
        """Remember ``note`` as the last checkpoint signed (atomic and durable)."""
        body = {"schema": SIGNER_STATE_SCHEMA, "origin": self.origin, "note": note}
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        SlotFile(self.path).write(json.dumps(body, indent=2) + "\n")


def _parse_state(path: Path, text: str, origin: str | None) -> tuple[Checkpoint, str]:
    try:
        data = json.loads(text)
        note = str(data["note"])
        checkpoint = parse_checkpoint_body(parse_note(note)[0])
    except (ValueError, KeyError, TypeError, VerificationError) as exc:
        raise StoreError(
            f"the signer state {path} is unreadable: {exc}",
            hint="Restore it from a backup; never sign until it is back.",
        ) from exc
    if data.get("schema") != SIGNER_STATE_SCHEMA or (
        origin is not None and checkpoint.origin != origin
    ):
        raise StoreError(f"the signer state {path} is not for origin {origin!r}")
    return checkpoint, note


@dataclass(frozen=True, slots=True)
class KnownOrigins:
    """The origins a keyring created or adopted (``<directory>/origins.json``).

    Signer directories written before the registry existed hold only per-origin state files;
    the origins those name count as adopted (each was signed with this keyring), so existing
    journals keep working without a migration step.
    """

    directory: Path

    @property
    def path(self) -> Path:
        """The registry's base path (slots ``origins.json.0`` and ``.1``)."""
        return self.directory / "origins.json"

    def _registered(self) -> list[str]:
        try:
            text = SlotFile(self.path).read()
        except DamagedStateError as exc:
            raise _damaged("the origin registry", exc) from exc
        if text is None:
            return []
        try:
            data = json.loads(text)
            schema, origins = data.get("schema"), [str(origin) for origin in data["origins"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"the origin registry {self.path} is unreadable: {exc}") from exc
        if schema != KNOWN_ORIGINS_SCHEMA:
            raise StoreError(f"the origin registry {self.path} is not {KNOWN_ORIGINS_SCHEMA}")
        return origins

    def _signed(self) -> list[str]:
        """Origins named by per-origin state files (those written before the registry)."""
        found = []
        for slot in sorted(self.directory.glob("*.json.[01]")):
            if slot.name.startswith("origins."):
                continue
            with contextlib.suppress(DamagedStateError, StoreError):
                text = SlotFile(slot.with_suffix("")).read()
                if text is not None:
                    found.append(_parse_state(slot, text, None)[0].origin)
        return found

    def origins(self) -> tuple[str, ...]:
        """Every origin the keyring created or adopted, sorted."""
        if not self.directory.is_dir():
            return ()
        return tuple(sorted({*self._registered(), *self._signed()}))

    def register(self, origin: str) -> None:
        """Record ``origin`` as created or adopted by this keyring (durable; idempotent)."""
        with _flock(self.directory / "origins.lock"):
            have = self._registered()
            if origin in have:
                return
            body = {"schema": KNOWN_ORIGINS_SCHEMA, "origins": sorted({*have, origin})}
            SlotFile(self.path).write(json.dumps(body, indent=2) + "\n")
