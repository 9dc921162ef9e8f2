"""The one shape of a fail-closed Decision, and the one digest of a request that may not encode.

docs/design/decision.md (fail closed): whenever no clean verdict can be rendered (the decision
point, an engine, the journal or the caller's own input failed), the record is a denial whose
last, decisive step, ``@unavailable`` (``unavailable``) or ``@request`` (``input-rejected``, the
request itself is malformed), says what was expected (``test``) and what failed (``problem``).
The built-in engine, the engine adapters, the enforcer, the chat guard and the MCP gate build it
here, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from refusalkit._internal.stamps import stamp
from refusalkit._internal.texts import MESSAGES, STAGE_CODES
from refusalkit.model import Decision, EngineRef, PolicyRef, Subject, WhyStep, canonical_json

__all__ = ["FAIL_STAGES", "failed_decision", "safe_digest"]

FAIL_STAGES = ("@unavailable", "@request")


def failed_decision(
    *,
    test: str,
    problem: str | None,
    policy: PolicyRef,
    engine: EngineRef,
    subject: Subject,
    request_digest: str,
    stage: str = "@unavailable",
    message: str | None = None,
    field: str | None = None,
    earlier: tuple[WhyStep, ...] = (),
) -> Decision:
    """A new ``deny`` Decision of ``stage``, decided now, ending in one decisive step.

    ``problem`` names what failed, never a request value: it is kept in the record; ``field``
    names the request field at fault, if any; ``earlier`` steps are kept, none of them decisive;
    ``message`` defaults to the stage's own (``refusalkit._internal.texts.MESSAGES``).
    """
    if stage not in FAIL_STAGES:
        raise ValueError(f"a decision fails closed at {FAIL_STAGES}, not {stage!r}")
    action, code = STAGE_CODES[stage]
    step = WhyStep(
        rule=stage, effect="deny", matched=True, decisive=True, field=field, test=test,
        detail=problem,
    )  # fmt: skip
    decision_id, decided_at = stamp()
    return Decision(
        decision_id=decision_id,
        action=action,
        reason_code=code,
        matched_rule=stage,
        message=message if message is not None else MESSAGES[stage],
        why_trail=(*(replace(s, decisive=False) for s in earlier), step),
        policy=policy,
        engine=engine,
        subject=subject,
        request_digest=request_digest,
        decided_at=decided_at,
    )


def safe_digest(
    digest: Callable[[bytes], str], request: Any, raw: str | bytes | None = None
) -> str:
    """``digest`` of the request's RFC 8785 bytes (or of ``raw``, the bytes as received); never
    raises: a request that cannot be encoded (an integer beyond I-JSON's range, a lone surrogate,
    a value that is not JSON, or none at all) is digested as the empty string."""
    try:
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
        elif request is None:
            data = b""
        elif isinstance(request, Mapping) and type(request) is not dict:
            data = canonical_json(dict(request))
        else:
            data = canonical_json(request)
    except Exception:  # noqa: BLE001 (an unencodable request keeps the empty digest)
        data = b""
    return digest(data)
