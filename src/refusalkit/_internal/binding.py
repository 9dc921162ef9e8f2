"""Answers bound to requests: the ``client_request_id`` of a decision (docs/design/client.md,
Answers bound to requests).

A client sends a fresh secret request id with each call (the ``Refusalkit-Request-Id`` header,
128 random bits as hex); the service writes into each decision it journals and returns a
binding of that id to the body it received and to the decision's place in it:
``hmac-sha256:`` + HMAC-SHA256 (RFC 2104) keyed by the id's bytes, of SHA-256 (FIPS 180-4) of the
body, a newline and the place (``decide`` for ``POST /v1/decide``, ``batch/<i>`` for the i-th
decision of ``POST /v1/decide/batch``). The client computes the same from the bytes it sent: an
answer to another request, another call or another place in a batch does not match. The id never
reaches the journal, so a reader of the journal learns nothing of the request from the binding.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterator

__all__ = [
    "REQUEST_ID_HEADER",
    "batch_bindings",
    "decide_binding",
    "new_request_id",
    "valid_request_id",
]

REQUEST_ID_HEADER = "Refusalkit-Request-Id"
_PREFIX = "hmac-sha256:"
_ID = re.compile(r"(?:[0-9a-f]{2}){16,64}")


def new_request_id() -> str:
    """A fresh request id: 128 random bits as 32 lowercase hex digits."""
    return secrets.token_hex(16)


def valid_request_id(text: str) -> bool:
    """Whether ``text`` is a request id: 32 to 128 lowercase hex digits, an even count."""
    return _ID.fullmatch(text) is not None


def _bind(key: bytes, body_hash: bytes, place: bytes) -> str:
    return _PREFIX + hmac.new(key, body_hash + b"\n" + place, hashlib.sha256).hexdigest()


def decide_binding(request_id: str, body: bytes) -> str:
    """The binding of the one decision of a ``POST /v1/decide`` call whose body is ``body``."""
    return _bind(bytes.fromhex(request_id), hashlib.sha256(body).digest(), b"decide")


def batch_bindings(request_id: str, body: bytes) -> Iterator[str]:
    """The bindings of the decisions of a ``POST /v1/decide/batch`` call, in order (endless:
    zip it with the decisions)."""
    key, body_hash = bytes.fromhex(request_id), hashlib.sha256(body).digest()
    i = 0
    while True:
        yield _bind(key, body_hash, b"batch/%d" % i)
        i += 1
