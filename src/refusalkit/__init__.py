"""refusalkit: every "no" an AI system says, as a structured, redacted, journaled refusal.

The parts: ``refusalkit.model`` (records, no I/O), ``refusalkit.decide`` (the decision point),
``refusalkit.journal`` (the transparency log), ``refusalkit.chat`` (the chat turn guard),
``refusalkit.provenance`` (refusal drift) and ``refusalkit.server`` (the HTTP service).
"""

from __future__ import annotations

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

__all__ = [
    "DECISION_SCHEMA",
    "REASON_CODES_VERSION",
    "Action",
    "CalibrationError",
    "CalibrationSetError",
    "ChatError",
    "ComparisonError",
    "Decision",
    "EthicsPackError",
    "JournalError",
    "Keyring",
    "KeyringError",
    "PolicyError",
    "ProofError",
    "ReasonCode",
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
]
