"""A decision made where no decision point answered: ``deny`` + ``unavailable`` (fail closed).

The service could not be reached, the journal could not take a decision, or the caller's own
identity callable raised: the request is refused, never allowed, and the record says why in the
``@unavailable`` step (docs/design/decision.md, fail closed). The request digest is keyed by a
random per-process key, so the record neither leaks the arguments nor can be matched against a
guess of them, yet repeats of one request within a process share a digest.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from refusalkit._internal.failclosed import failed_decision, safe_digest
from refusalkit._internal.texts import MESSAGES
from refusalkit._version import __version__
from refusalkit.model import Decision, EngineRef, PolicyRef, Subject

__all__ = ["UNAVAILABLE_MESSAGE", "fail_closed"]

UNAVAILABLE_MESSAGE = MESSAGES["@unavailable"]
_KEY = secrets.token_bytes(32)
_KEY_ID = "local-" + hashlib.sha256(_KEY).hexdigest()[:8]
_ENGINE = EngineRef("refusalkit-enforcer", __version__)
_NO_POLICY = PolicyRef("unknown", "unknown", "unknown")


def _hmac(data: bytes) -> str:
    return f"hmac-sha256:{_KEY_ID}:{hmac.new(_KEY, data, hashlib.sha256).hexdigest()}"


def _digest(request: Any) -> str:
    return safe_digest(_hmac, request if isinstance(request, Mapping) else None)


def _subject(request: Any) -> Subject:
    caller = request.get("caller") if isinstance(request, Mapping) else None
    if not isinstance(caller, Mapping):
        return Subject()
    agent, session = caller.get("agent"), caller.get("session")
    return Subject(
        agent if isinstance(agent, str) else None, session if isinstance(session, str) else None
    )


def fail_closed(request: Any, problem: str, *, policy: PolicyRef | None = None) -> Decision:
    """``deny`` + ``unavailable`` + ``@unavailable`` for ``request``, ``problem`` in the trail.

    ``problem`` must name what failed, never a request value (it is kept in the record).
    """
    return failed_decision(
        test="the enforcer failed closed",
        problem=problem,
        policy=policy or _NO_POLICY,
        engine=_ENGINE,
        subject=_subject(request),
        request_digest=_digest(request),
    )
