"""Dashboard sessions: a signed, expiring cookie naming the API key that logged in.

The cookie is ``base64url(JSON{name, key hash prefix, expiry}) "." HMAC-SHA256``; its key is derived
from the keyring's active redaction key (RFC 2104 HMAC as a PRF), so every worker that loads the
same keyring accepts the same cookies. Each request re-checks the key in the keys file, so revoking
a key ends its sessions. Set ``HttpOnly`` and ``SameSite=Strict`` (no cross-site sends, no script).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from refusalkit.keyring import Keyring

__all__ = ["COOKIE_NAME", "SessionClaims", "SessionSigner"]

COOKIE_NAME = "refusalkit_session"
_LABEL = b"refusalkit-ui-session/v1"


@dataclass(frozen=True, slots=True)
class SessionClaims:
    """Who a session is: the key's name and a prefix of its hash (binds the cookie to that key)."""

    name: str
    key_hash: str
    expires: int


class SessionSigner:
    """Makes and checks session cookies."""

    def __init__(self, keyring: Keyring, *, lifetime_s: int = 8 * 3600) -> None:
        base = keyring.redaction_keys[keyring.redaction_active]
        self._key = hmac.new(base, _LABEL, hashlib.sha256).digest()
        self.lifetime_s = lifetime_s

    def issue(self, name: str, key_hash: str) -> str:
        """A cookie value for the key ``name`` (whose stored hash is ``key_hash``)."""
        claims = {"n": name, "h": key_hash[-24:], "e": int(time.time()) + self.lifetime_s}
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return f"{body}.{self._mac(body)}"

    def read(self, value: str | None) -> SessionClaims | None:
        """The claims of a valid, unexpired cookie; None for anything else."""
        if not value or value.count(".") != 1:
            return None
        body, mac = value.split(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            parsed = SessionClaims(str(claims["n"]), str(claims["h"]), int(claims["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return parsed if parsed.expires > time.time() else None

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
