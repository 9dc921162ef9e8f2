"""Who may do what: bearer API keys with scopes (401 without a valid key, 403 without the scope).

Keys are looked up by the SHA-256 of the presented value in the keys file, which is re-read when
it changes, so ``service keys add`` and ``revoke`` take effect without a restart. The service and
the MCP proxy check keys here alike; the FastAPI dependency is ``refusalkit.server._auth.require``.
"""

from __future__ import annotations

from refusalkit._internal.apierrors import ApiError, ErrorCode
from refusalkit._internal.keys import ApiKey, KeyStore, Scope
from refusalkit.errors import RefusalkitError

__all__ = ["INSECURE_KEY", "Authenticator", "bearer_token"]

INSECURE_KEY = ApiKey("insecure-no-auth", "", frozenset(Scope), "")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="refusalkit"'}


def bearer_token(authorization: str | None) -> str | None:
    """The key in an ``Authorization: Bearer <key>`` header value (RFC 6750 §2.1), else None.

    The one parser of the header, for every route and the decide fast path alike: the scheme is
    case-insensitive and the blanks around the key are ignored. A header in another scheme, or a
    bare key without ``Bearer``, is a 401 that says so: telling that caller "no API key was sent"
    would send them looking in the wrong place.
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        shown = "a bare value" if not token else f"the {scheme[:20]!r} scheme"
        raise ApiError(
            401,
            ErrorCode.UNAUTHENTICATED,
            f"the Authorization header uses {shown}, not Bearer",
            "Send the key as `Authorization: Bearer <key>`.",
            headers=_CHALLENGE,
        )
    return token.strip() or None


class Authenticator:
    """Checks a presented key against the keys file (or lets all in, when insecure)."""

    def __init__(self, store: KeyStore | None) -> None:
        self.store = store

    def identify(self, presented: str | None) -> ApiKey:
        """The active key record of ``presented``; raises a 401 ``ApiError`` otherwise."""
        if self.store is None:
            return INSECURE_KEY
        if not presented:
            raise ApiError(
                401,
                ErrorCode.UNAUTHENTICATED,
                "no API key was sent",
                "Send `Authorization: Bearer <key>`; make one with `refusalkit service keys add`.",
                headers=_CHALLENGE,
            )
        try:
            key = self.store.lookup(presented)
        except RefusalkitError as exc:
            raise ApiError(
                503, ErrorCode.NOT_READY, f"the keys file cannot be read: {exc.message}", exc.hint
            ) from exc
        if key is None or key.revoked is not None:
            raise ApiError(
                401,
                ErrorCode.UNAUTHENTICATED,
                "the API key is not known"
                if key is None
                else f"the API key {key.name!r} is revoked",
                "Check the key, or ask an operator for a new one.",
                headers=_CHALLENGE,
            )
        return key

    def check(self, presented: str | None, scope: Scope) -> ApiKey:
        """The key, when it is valid and has ``scope``; 401 or 403 ``ApiError`` otherwise."""
        key = self.identify(presented)
        if not key.allows(scope):
            have = ", ".join(sorted(s.value for s in key.scopes))
            raise ApiError(
                403,
                ErrorCode.FORBIDDEN,
                f"the key {key.name!r} lacks the {scope.value!r} scope (it has: {have})",
                f"Use a key made with --scopes {scope.value}.",
            )
        return key
