"""The record model: pure data, no I/O (docs/design/decision.md and docs/design/policy.md).

Decisions, why-trail steps, requests, actions and reason codes, canonical JSON and ids.
"""

from refusalkit._deprecated import moved as _moved
from refusalkit.model._approval import DEFAULT_TTL_S, Approval, action_digest, parse_duration
from refusalkit.model._canonical import canonical_json
from refusalkit.model._codes import (
    REASON_CODES_VERSION,
    TYPED_REFUSAL_PREFIX,
    Action,
    ReasonCode,
)
from refusalkit.model._decision import (
    DECISION_SCHEMA,
    Decision,
    EngineRef,
    PolicyRef,
    Subject,
    WhyStep,
)
from refusalkit.model._ids import format_timestamp, now_utc, uuid7
from refusalkit.model._refusal_line import refusal_line
from refusalkit.model._request import Request, parse_request

__all__ = [
    "DECISION_SCHEMA",
    "DEFAULT_TTL_S",
    "REASON_CODES_VERSION",
    "TYPED_REFUSAL_PREFIX",
    "Action",
    "Approval",
    "Decision",
    "EngineRef",
    "PolicyRef",
    "ReasonCode",
    "Request",
    "Subject",
    "WhyStep",
    "action_digest",
    "canonical_json",
    "format_timestamp",
    "now_utc",
    "parse_duration",
    "parse_request",
    "refusal_line",
    "uuid7",
]

# Moved to the shared internal layer, beside the engines' own fail-closed records; importable,
# with a DeprecationWarning, until 0.3 (CHANGELOG.md).
__getattr__ = _moved(
    __name__, {"unavailable_decision": ("refusalkit._internal.failclosed", "failed_decision")}
)
