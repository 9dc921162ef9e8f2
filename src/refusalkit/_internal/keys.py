"""API keys of the service: scopes, a hashed keys file, and lookup by presented key.

A key is ``rk_`` + 43 base64url characters (256 random bits). Only its SHA-256 is stored: a
high-entropy secret needs no slow password hash, and a reader of the file cannot use it to call the
service. The file (``refusalkit.service-keys/v1``) has mode 0600 and is replaced atomically::

    {"schema": "refusalkit.service-keys/v1",
     "keys": [{"name": "ci", "hash": "sha256:<hex>", "scopes": ["decide", "read"],
               "created": "2026-05-02T14:07:22.123Z", "revoked": null}]}
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from refusalkit.errors import UsageError
from refusalkit.model import format_timestamp, now_utc

__all__ = ["KEYS_SCHEMA", "ApiKey", "KeyStore", "Scope", "hash_key", "parse_scopes"]

KEYS_SCHEMA = "refusalkit.service-keys/v1"
_KEY_PREFIX = "rk_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class Scope(enum.StrEnum):
    """What a key may do: ``decide`` (POST decisions), ``read`` (journal, stats, UI), ``admin``."""

    DECIDE = "decide"
    READ = "read"
    ADMIN = "admin"


def parse_scopes(text: str | Iterable[str]) -> frozenset[Scope]:
    """``"decide,read"`` (or a list) as scopes; raises ``UsageError`` on an unknown one."""
    items = text.split(",") if isinstance(text, str) else list(text)
    scopes: set[Scope] = set()
    for item in (i.strip() for i in items):
        if not item:
            continue
        try:
            scopes.add(Scope(item))
        except ValueError:
            known = ", ".join(s.value for s in Scope)
            raise UsageError(f"unknown scope {item!r}", hint=f"Scopes are: {known}.") from None
    if not scopes:
        raise UsageError("a key needs at least one scope", hint="Pass --scopes decide,read.")
    return frozenset(scopes)


def hash_key(key: str) -> str:
    """``sha256:<hex>`` of a presented key: what the keys file stores and lookups compare."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key's record (never the key itself). ``admin`` grants every scope."""

    name: str
    hash: str
    scopes: frozenset[Scope]
    created: str
    revoked: str | None = None

    def allows(self, scope: Scope) -> bool:
        """Whether this key, unrevoked, may act in ``scope``."""
        return self.revoked is None and (scope in self.scopes or Scope.ADMIN in self.scopes)

    def to_dict(self) -> dict[str, Any]:
        """File form."""
        return {
            "name": self.name,
            "hash": self.hash,
            "scopes": sorted(s.value for s in self.scopes),
            "created": self.created,
            "revoked": self.revoked,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApiKey:
        """Rebuild a record from its file form."""
        return cls(
            name=str(data["name"]),
            hash=str(data["hash"]),
            scopes=parse_scopes(data["scopes"]),
            created=str(data["created"]),
            revoked=data.get("revoked"),
        )


class KeyStore:
    """The keys file: add, list, revoke, and look a presented key up (re-read when it changes).

    ``recheck_s`` bounds how often the file is checked for changes (0: on every lookup); the
    service uses 1 s, so a revocation takes effect within a second.
    """

    def __init__(self, path: str | Path, *, recheck_s: float = 0.0) -> None:
        self.path = Path(path)
        self.recheck_s = recheck_s
        self._stamp: tuple[int, int] | None = None
        self._keys: tuple[ApiKey, ...] = ()
        self._by_hash: dict[str, ApiKey] = {}
        self._next_check = 0.0

    def list_keys(self) -> tuple[ApiKey, ...]:
        """Every record, revoked ones included, in the order they were added."""
        self._refresh()
        return self._keys

    def lookup(self, presented: str) -> ApiKey | None:
        """The record of a presented key, or None when it is unknown (revoked ones are returned)."""
        self._refresh()
        return self._by_hash.get(hash_key(presented))

    def get(self, name: str) -> ApiKey | None:
        """The record named ``name``, or None."""
        return next((k for k in self.list_keys() if k.name == name), None)

    def add(self, name: str, scopes: Iterable[Scope]) -> tuple[ApiKey, str]:
        """Create a key; returns its record and the key itself (shown once, never stored)."""
        if not _NAME.match(name):
            raise UsageError(
                f"bad key name {name!r}",
                hint="Use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
            )
        if any(k.name == name and k.revoked is None for k in self.list_keys()):
            raise UsageError(f"a key named {name!r} exists", hint="Revoke it first or pick a name.")
        secret = _KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(name, hash_key(secret), frozenset(scopes), format_timestamp(now_utc()))
        self._write((*self.list_keys(), record))
        return record, secret

    def revoke(self, name: str) -> ApiKey:
        """Mark the active key ``name`` revoked (kept in the file, so the audit trail stays)."""
        keys = list(self.list_keys())
        for i, key in enumerate(keys):
            if key.name == name and key.revoked is None:
                keys[i] = replace(key, revoked=format_timestamp(now_utc()))
                self._write(tuple(keys))
                return keys[i]
        raise UsageError(
            f"no active key named {name!r}", hint="See `refusalkit service keys list`."
        )

    def _refresh(self) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.recheck_s
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._keys, self._by_hash = None, (), {}
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._keys = _read(self.path, st.st_mode)
            self._by_hash = {k.hash: k for k in self._keys}
            self._stamp = stamp

    def _write(self, keys: tuple[ApiKey, ...]) -> None:
        body = {"schema": KEYS_SCHEMA, "keys": [k.to_dict() for k in keys]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.path)
        self._stamp = None
        self._next_check = 0.0


def _read(path: Path, mode: int) -> tuple[ApiKey, ...]:
    if stat.S_IMODE(mode) & 0o077:
        raise UsageError(
            f"keys file {path} is readable by others (mode {stat.S_IMODE(mode):o})",
            hint=f"Run `chmod 600 {path}`.",
        )
    problem: Exception
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("schema") == KEYS_SCHEMA:
            return tuple(ApiKey.from_dict(item) for item in data["keys"])
        problem = ValueError(f"its schema is not {KEYS_SCHEMA}")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = exc
    raise UsageError(
        f"keys file {path} is not a refusalkit keys file: {problem}",
        hint="Create one with `refusalkit service keys add NAME --keys-file F`.",
    )
