"""Attestation: the caller proves who it is with a compact JWS (RFC 7515 §7.1), alg EdDSA
(RFC 8037), signed by a key the pack trusts (docs/design/policy.md, stage ``@attestation``).

Checks, in order: a string token in compact form; header ``alg`` = ``EdDSA`` and a ``kid`` the
pack lists; a valid signature (``joserfc``); a strict JSON object payload (no duplicate claim,
no ``NaN`` or infinity) whose ``sub`` equals ``caller.agent``; ``exp``, ``nbf`` and ``iat``
(RFC 7519 §4.1.4-6, NumericDate) integers from 0 to the end of year 9999, ``exp`` in the future
and ``nbf``, when present, in the past. Verified signatures are cached (bounded); claims are
re-checked on every decision.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import OKPKey

from refusalkit._bounded import BoundedCache
from refusalkit.decide._warnings import warnings_as

__all__ = ["AttestationResult", "Attestor", "mint_token", "public_key_from_seed"]

_CACHE_LIMIT = 1024
_MAX_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z: any later NumericDate means "never expires"


class _NotStrictError(ValueError):
    """A payload that JSON parsers may read differently: duplicate names, non-finite numbers."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise _NotStrictError("duplicate claim")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise _NotStrictError(f"{name} is not a JSON number")


def _strict_json(raw: bytes | str) -> Any:
    """JSON as RFC 8259 §4 and RFC 7519 §4 want it: unique names, finite numbers."""
    value = json.loads(raw, object_pairs_hook=_unique, parse_constant=_no_constant)
    if _has_infinity(value):
        raise _NotStrictError("a number out of range")
    return value


def _has_infinity(value: Any) -> bool:
    if isinstance(value, float):
        return value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(_has_infinity(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_infinity(v) for v in value)
    return False


@dataclass(frozen=True, slots=True)
class AttestationResult:
    """``ok`` and, either way, a short value-free explanation for the trail."""

    ok: bool
    detail: str


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _header(token: str) -> dict[str, Any] | None:
    try:
        segment = token.split(".", 1)[0]
        data = _strict_json(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


class Attestor:
    """Verifies attestation tokens against the pack's trusted keys."""

    __slots__ = ("_cache", "_keys")

    def __init__(self, trusted_keys: Mapping[str, bytes]) -> None:
        self._keys = {
            kid: OKPKey.import_key({"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw)})
            for kid, raw in trusted_keys.items()
        }
        self._cache: BoundedCache[str, tuple[str, dict[str, Any]]] = BoundedCache(_CACHE_LIMIT)

    def verify(self, token: Any, agent: Any, now: float | None = None) -> AttestationResult:
        """Check ``token`` for ``agent`` at ``now`` (Unix seconds; default: the clock)."""
        if token is None:
            return AttestationResult(ok=False, detail="no caller.token")
        if not isinstance(token, str):
            return AttestationResult(ok=False, detail="caller.token is not a string")
        claims = self._claims(token)
        if isinstance(claims, str):
            return AttestationResult(ok=False, detail=claims)
        kid, payload = claims
        return _check_claims(kid, payload, agent, time.time() if now is None else now)

    def _trusted_kid(self, token: str) -> str:
        """The header's ``kid`` when the header is well formed, else what is wrong with it."""
        if token.count(".") != 2:
            return "caller.token is not a compact JWS"
        header = _header(token)
        if header is None:
            return "caller.token has an unreadable JWS header"
        if header.get("alg") != "EdDSA":
            return "JWS alg is not EdDSA"
        kid = header.get("kid")
        if not isinstance(kid, str) or kid not in self._keys:
            return "JWS kid is not a trusted key"
        return kid

    def _claims(self, token: str) -> tuple[str, dict[str, Any]] | str:
        hit = self._cache.get(token)
        if hit is not None:
            return hit
        kid = self._trusted_kid(token)
        if kid not in self._keys:
            return kid  # the problem
        try:
            with warnings_as("ignore"):  # joserfc flags "EdDSA" (RFC 9864); policy.md names it
                signed = jws.deserialize_compact(token, self._keys[kid], algorithms=["EdDSA"])
        except (JoseError, ValueError, UnicodeDecodeError):
            return "JWS signature does not verify"
        payload = _payload(signed.payload)
        if isinstance(payload, str):
            return payload
        return self._cache.put(token, (kid, payload))


def _payload(raw: bytes) -> dict[str, Any] | str:
    """The claims of a verified token, or what is wrong with them."""
    try:
        payload = _strict_json(raw)
    except _NotStrictError:
        return "JWS payload has a duplicate claim or a non-finite number"
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "JWS payload is not JSON"
    if not isinstance(payload, dict):
        return "JWS payload is not a JSON object"
    return payload


def _numeric_date(payload: dict[str, Any], name: str) -> int | str | None:
    """A claim as an RFC 7519 NumericDate: an integer in range; None when absent, else the
    problem (a float, a boolean, NaN, 1e999 or a year-10000 date all never expire)."""
    if name not in payload:
        return None
    value = payload[name]
    if type(value) is not int or not 0 <= value <= _MAX_TIME:
        return f"{name} is not an integer NumericDate in range"
    return value


def _check_claims(kid: str, payload: dict[str, Any], agent: Any, now: float) -> AttestationResult:
    if not isinstance(agent, str) or payload.get("sub") != agent:
        return AttestationResult(ok=False, detail=f"kid {kid}: sub is not caller.agent")
    times = {name: _numeric_date(payload, name) for name in ("exp", "nbf", "iat")}
    bad = next((t for t in times.values() if isinstance(t, str)), None)
    if bad is not None:
        return AttestationResult(ok=False, detail=f"kid {kid}: {bad}")
    exp, nbf = times["exp"], times["nbf"]
    if exp is None:
        return AttestationResult(ok=False, detail=f"kid {kid}: no exp")
    if now >= cast("int", exp):
        return AttestationResult(ok=False, detail=f"kid {kid}: token expired")
    if nbf is not None and now < cast("int", nbf):
        return AttestationResult(ok=False, detail=f"kid {kid}: token not yet valid (nbf)")
    return AttestationResult(ok=True, detail=f"verified, kid {kid}")


def mint_token(
    private_seed: bytes, kid: str, sub: str, exp: float, *, extra: Mapping[str, Any] | None = None
) -> str:
    """A compact EdDSA JWS for ``sub`` (for tests, examples and callers that attest in-process)."""
    raw_pub = public_key_from_seed(private_seed)
    key = OKPKey.import_key(
        {"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw_pub), "d": _b64url(private_seed)}
    )
    exp = int(exp) if isinstance(exp, float) else exp  # a NumericDate is an integer here
    payload = json.dumps({"sub": sub, "exp": exp, **(extra or {})}, separators=(",", ":"))
    with warnings_as("ignore"):
        return jws.serialize_compact(
            {"alg": "EdDSA", "kid": kid}, payload, key, algorithms=["EdDSA"]
        )


def public_key_from_seed(seed: bytes) -> bytes:
    """The raw Ed25519 public key (RFC 8032 §5.1.5) of a 32-byte private seed."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )
    from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
        Encoding,
        PublicFormat,
    )

    return (
        Ed25519PrivateKey.from_private_bytes(seed)
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
    )
