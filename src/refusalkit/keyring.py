"""The keyring: redaction keys (HMAC-SHA256) and Ed25519 signing keys, in one JSON file.

A keyring file has mode 0600 and this form (``refusalkit.keyring/v1``)::

    {"schema": "refusalkit.keyring/v1",
     "redaction": {"active": "k1", "keys": {"k1": "<base64 32 bytes>"}},
     "signing":   {"active": "s1", "keys": {"s1": "<base64 Ed25519 seed>"}}}

Rotation adds a key and makes it active; old key ids stay, so tokens and signatures made with
them remain readable and checkable. ``--keyring PATH``, else ``REFUSALKIT_KEYRING``, else the
default keyring in the user's data directory selects the file.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from refusalkit.errors import KeyringError
from refusalkit.redact import Redactor

__all__ = ["KEYRING_ENV", "KEYRING_SCHEMA", "Keyring", "default_keyring_path", "resolve_keyring"]

KEYRING_SCHEMA = "refusalkit.keyring/v1"
KEYRING_ENV = "REFUSALKIT_KEYRING"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError) as exc:
        raise KeyringError(f"{what} is not valid base64") from exc
    if len(raw) != 32:
        raise KeyringError(f"{what} must be 32 bytes, not {len(raw)}")
    return raw


def _next_id(prefix: str, existing: dict[str, bytes]) -> str:
    numbers = [int(k[len(prefix) :]) for k in existing if k[len(prefix) :].isdigit()]
    return f"{prefix}{max(numbers, default=0) + 1}"


@dataclass(frozen=True, slots=True)
class Keyring:
    """Redaction and signing keys by key id, with the active id of each kind."""

    redaction_keys: dict[str, bytes]
    redaction_active: str
    signing_keys: dict[str, bytes] = field(default_factory=dict)
    signing_active: str = ""

    @classmethod
    def generate(cls) -> Keyring:
        """A fresh keyring: one random redaction key ``k1`` and one Ed25519 key ``s1``."""
        return cls({"k1": secrets.token_bytes(32)}, "k1", {"s1": secrets.token_bytes(32)}, "s1")

    def redactor(self, key_id: str | None = None) -> Redactor:
        """The redactor for ``key_id`` (default: the active redaction key)."""
        kid = key_id or self.redaction_active
        if kid not in self.redaction_keys:
            raise KeyringError(
                f"the keyring has no redaction key {kid!r}",
                hint="`refusalkit keys show` lists its key ids.",
            )
        return Redactor(kid, self.redaction_keys[kid])

    def signing_key(self, key_id: str | None = None) -> Ed25519PrivateKey:
        """The Ed25519 private key ``key_id`` (default: the active signing key)."""
        kid = key_id or self.signing_active
        if kid not in self.signing_keys:
            raise KeyringError(f"the keyring has no signing key {kid!r}")
        return Ed25519PrivateKey.from_private_bytes(self.signing_keys[kid])

    def public_key(self, key_id: str | None = None) -> Ed25519PublicKey:
        """The Ed25519 public key of ``key_id`` (default: the active signing key)."""
        return self.signing_key(key_id).public_key()

    def public_key_bytes(self, key_id: str | None = None) -> bytes:
        """The 32 raw bytes of the public key (RFC 8032 §5.1.5)."""
        return self.public_key(key_id).public_bytes(Encoding.Raw, PublicFormat.Raw)

    def rotate_redaction(self) -> Keyring:
        """A keyring with a new active redaction key; old ids stay readable."""
        kid = _next_id("k", self.redaction_keys)
        keys = {**self.redaction_keys, kid: secrets.token_bytes(32)}
        return replace(self, redaction_keys=keys, redaction_active=kid)

    def rotate_signing(self) -> Keyring:
        """A keyring with a new active signing key; old keys stay for verification."""
        kid = _next_id("s", self.signing_keys)
        keys = {**self.signing_keys, kid: secrets.token_bytes(32)}
        return replace(self, signing_keys=keys, signing_active=kid)

    def to_dict(self) -> dict[str, Any]:
        """The file form."""
        return {
            "schema": KEYRING_SCHEMA,
            "redaction": {
                "active": self.redaction_active,
                "keys": {k: _b64(v) for k, v in self.redaction_keys.items()},
            },
            "signing": {
                "active": self.signing_active,
                "keys": {k: _b64(v) for k, v in self.signing_keys.items()},
            },
        }

    @classmethod
    def from_dict(cls, data: Any) -> Keyring:
        """Parse the file form; raises ``KeyringError`` naming what is wrong."""
        if not isinstance(data, dict) or data.get("schema") != KEYRING_SCHEMA:
            raise KeyringError(f"not a {KEYRING_SCHEMA} file")
        try:
            red, sig = data["redaction"], data.get("signing", {"active": "", "keys": {}})
            red_keys = {k: _unb64(v, f"redaction key {k}") for k, v in red["keys"].items()}
            sig_keys = {k: _unb64(v, f"signing key {k}") for k, v in sig["keys"].items()}
            ring = cls(red_keys, str(red["active"]), sig_keys, str(sig["active"]))
        except (KeyError, TypeError, AttributeError) as exc:
            raise KeyringError(f"keyring is missing {exc}") from exc
        ring.redactor()  # the active id must exist
        return ring

    def save(self, path: str | Path) -> Path:
        """Write the keyring with mode 0600, atomically (never readable by others, even briefly)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2)
            handle.write("\n")
        tmp.replace(target)
        return target

    @classmethod
    def load(cls, path: str | Path) -> Keyring:
        """Read a keyring file; refuses one that others may read (like ssh does)."""
        source = Path(path)
        try:
            mode = stat.S_IMODE(source.stat().st_mode)
            text = source.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise KeyringError(f"no keyring at {source}") from exc
        except OSError as exc:
            raise KeyringError(f"cannot read keyring {source}: {exc.strerror}") from exc
        if mode & 0o077:
            raise KeyringError(
                f"keyring {source} is readable by others (mode {mode:o})",
                hint=f"Run `chmod 600 {source}`.",
            )
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = f"keyring {source} is not JSON: {exc.msg}, line {exc.lineno}"
            raise KeyringError(msg) from exc
        return cls.from_dict(data)


def _load_named_by_env(path: Path) -> Keyring:
    """The keyring ``$REFUSALKIT_KEYRING`` names; a missing one says where the name came from."""
    if not path.exists():
        raise KeyringError(
            f"no keyring at {path}, the file ${KEYRING_ENV} names",
            hint=f"Create it with `refusalkit keys init {path}`, or unset {KEYRING_ENV} "
            "to use the default keyring.",
        )
    return Keyring.load(path)


def default_keyring_path() -> Path:
    """Where the default keyring lives: the user's data directory."""
    return Path(platformdirs.user_data_dir("refusalkit")) / "keyring.json"


def resolve_keyring(
    path: str | Path | None = None, *, create: bool = False
) -> tuple[Keyring, Path]:
    """The keyring at ``path``, else ``$REFUSALKIT_KEYRING``, else the default one.

    With ``create``, a missing default keyring (only the default) is generated; an explicit
    path that does not exist is an error, so a typo never silently makes new keys.
    """
    if path:
        return Keyring.load(path), Path(path)
    named = os.environ.get(KEYRING_ENV)
    if named:
        return _load_named_by_env(Path(named)), Path(named)
    target = default_keyring_path()
    if not target.exists():
        if not create:
            raise KeyringError(
                f"no keyring at {target}, the default one",
                hint="Make it with `refusalkit keys init`, or pass --keyring PATH.",
            )
        Keyring.generate().save(target)
    return Keyring.load(target), target
