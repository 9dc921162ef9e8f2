"""refusalkit: every "no" an AI system says, as a structured, redacted, journaled refusal.

The parts: ``refusalkit.model`` (records, no I/O), ``refusalkit.decide`` (the decision point),
``refusalkit.journal`` (the transparency log), ``refusalkit.chat`` (the chat turn guard),
``refusalkit.provenance`` (refusal drift), ``refusalkit.server`` (the HTTP service),
``refusalkit.client`` (its client) and ``refusalkit.integrations`` (agent frameworks);
``refusalkit.enforcer(policy=PATH, journal=STORE, keyring=PATH)`` is the local ``Enforcer``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from refusalkit.errors import (
    CalibrationError,
    CalibrationSetError,
    ChatError,
    ComparisonError,
    EthicsPackError,
    JournalError,
    KeyringError,
    PolicyError,
    ProofError,
    RefusalkitError,
    RequestError,
    ResponderError,
    RunnerError,
    SafetyPackError,
    ServiceError,
    StoreError,
    UsageError,
    VerificationError,
)
from refusalkit.keyring import Keyring
from refusalkit.model import (
    DECISION_SCHEMA,
    REASON_CODES_VERSION,
    Action,
    Decision,
    ReasonCode,
    Request,
    WhyStep,
    canonical_json,
)
from refusalkit.redact import Redactor

__version__ = "0.1.0"

if TYPE_CHECKING:
    from refusalkit.chat import ChatResponse, ChatRuntime
    from refusalkit.decide import DecisionPoint, Pack, load_pack
    from refusalkit.enforce import enforcer
    from refusalkit.journal import Journal, Receipt, open_journal, verify_receipt
    from refusalkit.provenance import Directive, compare, require_baseline

# The parts' entry points, imported on first use so `import refusalkit` stays light (PEP 562).
_LAZY = {
    "ChatResponse": "refusalkit.chat",
    "ChatRuntime": "refusalkit.chat",
    "DecisionPoint": "refusalkit.decide",
    "Directive": "refusalkit.provenance",
    "Journal": "refusalkit.journal",
    "Pack": "refusalkit.decide",
    "Receipt": "refusalkit.journal",
    "compare": "refusalkit.provenance",
    "enforcer": "refusalkit.enforce",
    "load_pack": "refusalkit.decide",
    "open_journal": "refusalkit.journal",
    "require_baseline": "refusalkit.provenance",
    "verify_receipt": "refusalkit.journal",
}


def __getattr__(name: str) -> Any:
    """Load a part's entry point on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'refusalkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DECISION_SCHEMA",
    "REASON_CODES_VERSION",
    "Action",
    "CalibrationError",
    "CalibrationSetError",
    "ChatError",
    "ChatResponse",
    "ChatRuntime",
    "ComparisonError",
    "Decision",
    "DecisionPoint",
    "Directive",
    "EthicsPackError",
    "Journal",
    "JournalError",
    "Keyring",
    "KeyringError",
    "Pack",
    "PolicyError",
    "ProofError",
    "ReasonCode",
    "Receipt",
    "Redactor",
    "RefusalkitError",
    "Request",
    "RequestError",
    "ResponderError",
    "RunnerError",
    "SafetyPackError",
    "ServiceError",
    "StoreError",
    "UsageError",
    "VerificationError",
    "WhyStep",
    "__version__",
    "canonical_json",
    "compare",
    "enforcer",
    "load_pack",
    "open_journal",
    "require_baseline",
    "verify_receipt",
]
