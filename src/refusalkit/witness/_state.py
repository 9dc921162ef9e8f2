"""A witness's directory: its key, the logs it accepts, and its durable per-log state.

``DIR/witness-key.json`` (mode 0600) holds the cosigner name and Ed25519 seed; ``DIR/logs.json``
maps each accepted origin to the log's verifier keys (C2SP signed-note vkeys); ``DIR/state/``
holds, per origin, the latest checkpoint the witness cosigned, written durably with one fsync
(two alternating checksummed slots) before the witness answers, so a SIGKILL or a crash loses
nothing it has answered (C2SP tlog-witness: "MUST persist the new checkpoint before
responding").
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from refusalkit._durable import DamagedStateError, SlotFile, write_durably
from refusalkit.errors import UsageError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteVerifier,
    open_checkpoint,
    parse_checkpoint_body,
    parse_note,
    valid_key_name,
)
from refusalkit.witness._cosignature import CosignerKey

__all__ = ["WITNESS_KEY_SCHEMA", "WitnessDir"]

WITNESS_KEY_SCHEMA = "refusalkit.witness-key/v1"
WITNESS_LOGS_SCHEMA = "refusalkit.witness-logs/v1"
WITNESS_STATE_SCHEMA = "refusalkit.witness-state/v1"


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(
            f"no {what} at {path}", hint="Create the witness with `refusalkit witness init DIR`."
        ) from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"the {what} {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"the {what} {path} is not a JSON object")
    return data


def _damaged(root: Path, origin: str, why: str) -> UsageError:
    """The witness refuses to answer for a log whose state does not verify (fail closed):
    read as "never cosigned", it would cosign a fork from size 0."""
    return UsageError(
        f"the witness state of {origin!r} is damaged: {why}",
        hint=f"The witness answers 500 for this log until it is recovered. Restore {root}/state "
        "from a backup, or give it the last checkpoint it cosigned for the log (e.g. from the "
        f"log's store, with its cosignature): `refusalkit witness restore-state {root} "
        "--checkpoint FILE`.",
    )


@dataclass(frozen=True, slots=True)
class WitnessDir:
    """A witness's files under ``root``."""

    root: Path

    @classmethod
    def init(cls, root: str | Path, name: str | None = None) -> WitnessDir:
        """Create a witness: a fresh Ed25519 key under ``name`` and no logs. Refuses to
        overwrite an existing witness key."""
        witness = cls(Path(root))
        if witness.key_path.exists():
            raise UsageError(f"{witness.key_path} exists: this directory is already a witness")
        name = name or f"refusalkit.local/witness/{secrets.token_hex(6)}"
        if not valid_key_name(name):
            raise UsageError(f"{name!r} is not a usable witness name (no spaces or '+')")
        witness.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        seed = base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        body = {"schema": WITNESS_KEY_SCHEMA, "name": name, "seed": seed}
        write_durably(witness.key_path, json.dumps(body, indent=2) + "\n")
        write_durably(witness.logs_path, json.dumps({"schema": WITNESS_LOGS_SCHEMA, "logs": {}}))
        return witness

    @property
    def key_path(self) -> Path:
        """The key file."""
        return self.root / "witness-key.json"

    @property
    def logs_path(self) -> Path:
        """The accepted logs."""
        return self.root / "logs.json"

    def signing_key(self) -> tuple[str, Ed25519PrivateKey]:
        """The cosigner name and private key."""
        data = _read_json(self.key_path, "witness key")
        try:
            seed = base64.b64decode(str(data["seed"]), validate=True)
            return str(data["name"]), Ed25519PrivateKey.from_private_bytes(seed)
        except (KeyError, ValueError) as exc:
            raise UsageError(f"the witness key {self.key_path} is damaged: {exc}") from exc

    def cosigner_key(self) -> CosignerKey:
        """What verifiers pass as ``--witness-key``."""
        name, key = self.signing_key()
        return CosignerKey.for_key(
            name, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        )

    def logs(self) -> dict[str, list[NoteVerifier]]:
        """Accepted origins and the log keys trusted for each."""
        data = _read_json(self.logs_path, "witness log list")
        logs = data.get("logs", {})
        return {str(o): [NoteVerifier.parse(str(v)) for v in keys] for o, keys in logs.items()}

    def add_log(self, origin: str, vkey: str) -> NoteVerifier:
        """Accept checkpoints of ``origin`` signed by the log key ``vkey``."""
        verifier = NoteVerifier.parse(vkey)
        if verifier.name != origin:
            raise UsageError(
                f"the key is named {verifier.name!r}, not the origin {origin!r}",
                hint="refusalkit journals sign under their origin: pass "
                "`refusalkit journal public-key STORE` as --public-key.",
            )
        data = _read_json(self.logs_path, "witness log list")
        keys = data.setdefault("logs", {}).setdefault(origin, [])
        if verifier.vkey not in keys:
            keys.append(verifier.vkey)
        write_durably(self.logs_path, json.dumps(data, indent=2) + "\n")
        return verifier

    def _state_path(self, origin: str) -> Path:
        return (
            self.root / "state" / f"{hashlib.sha256(origin.encode('utf-8')).hexdigest()[:16]}.json"
        )

    def latest(self, origin: str) -> Checkpoint | None:
        """The latest checkpoint cosigned for ``origin`` (None: never)."""
        path = self._state_path(origin)
        try:
            text = SlotFile(path).read()
        except DamagedStateError as exc:
            raise _damaged(self.root, origin, str(exc)) from exc
        if text is None:
            return None
        try:
            data = json.loads(text)
            checkpoint = parse_checkpoint_body(parse_note(str(data["note"]))[0])
        except (ValueError, KeyError, TypeError, VerificationError) as exc:
            raise _damaged(self.root, origin, f"{path} is unreadable: {exc}") from exc
        if checkpoint.origin != origin:
            raise _damaged(self.root, origin, f"{path} is not for {origin!r}")
        return checkpoint

    def restore(self, note: str) -> Checkpoint:
        """Recovery after damaged state: take ``note``, the last checkpoint this witness
        cosigned for its log, from the operator (checked against the log's trusted keys), and
        make it the state again. Overwrites whatever state the origin had."""
        origin = parse_checkpoint_body(parse_note(note)[0]).origin
        trusted = self.logs().get(origin)
        if trusted is None:
            raise UsageError(
                f"the witness does not accept log {origin!r}",
                hint="Add it first: `refusalkit witness add-log DIR --origin O --public-key K`.",
            )
        checkpoint = open_checkpoint(note, trusted, origin=origin)
        self.remember(note)
        return checkpoint

    def remember(self, note: str) -> None:
        """Durably record ``note`` as the latest cosigned checkpoint of its origin."""
        origin = parse_checkpoint_body(parse_note(note)[0]).origin
        path = self._state_path(origin)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {"schema": WITNESS_STATE_SCHEMA, "origin": origin, "note": note}
        SlotFile(path).write(json.dumps(body, indent=2) + "\n")
