"""The public API is what ``__all__`` says: pinned here so a change to it is a conscious one."""

from __future__ import annotations

import importlib
from importlib.resources import files

import pytest

import refusalkit
from refusalkit.decide import DecisionPoint
from refusalkit.journal import open_journal

PUBLIC = {
    "refusalkit": [
        "Action", "CalibrationError", "CalibrationSetError", "ChatError", "ChatResponse",
        "ChatRuntime", "ComparisonError", "DECISION_SCHEMA", "Decision", "DecisionPoint",
        "Directive", "EthicsPackError", "Journal", "JournalError", "Keyring", "KeyringError",
        "Pack", "PolicyError", "ProofError", "REASON_CODES_VERSION", "ReasonCode", "Receipt",
        "Redactor", "RefusalkitError", "Request", "RequestError", "ResponderError",
        "RunnerError", "SafetyPackError", "ServiceError", "StoreError", "UsageError",
        "VerificationError", "WhyStep", "__version__", "canonical_json", "compare", "load_pack",
        "open_journal", "require_baseline", "verify_receipt",
    ],
    "refusalkit.model": [
        "Action", "DECISION_SCHEMA", "Decision", "EngineRef", "PolicyRef",
        "REASON_CODES_VERSION", "ReasonCode", "Request", "Subject", "WhyStep", "canonical_json",
        "format_timestamp", "now_utc", "parse_request", "uuid7",
    ],
    "refusalkit.decide": [
        "CaseResult", "DecisionEncoder", "DecisionPoint", "Pack", "canonical_bytes",
        "decide_lines", "explain",
        "load_cases", "load_pack", "mint_token", "pack_digest", "public_key_from_seed",
        "run_cases",
        "FastMac", "Lines", "Subjects", "make_decision", "make_step", "make_subject",
        "parse_pack_text", "read_pack_source", "stamp",
    ],
    "refusalkit.engines": [
        "AGT_ACTIONS", "AGT_DEFAULT_MAPPING", "Adapter", "AdapterFailure", "AgtAdapter",
        "CEDAR_DEFAULT_MAPPING", "CedarAdapter", "EngineKind", "EngineMapping", "EngineSpec",
        "EntitySpec", "OpaAdapter", "RegoAdapter", "load_mapping", "open_engine",
        "source_digest",
    ],
    "refusalkit.journal": [
        "BUNDLE_SCHEMA", "Checkpoint", "EMPTY_ROOT", "Journal", "NoteSignature", "NoteVerifier",
        "OpenedNote", "RECEIPT_SCHEMA", "Receipt", "VerifyReport", "canonical_bytes",
        "decision_fields",
        "export_bundle", "leaf_hash", "node_hash", "normalise_time", "open_checkpoint",
        "open_journal",
        "open_note", "parse_checkpoint_body", "root_of_leaves", "sign_checkpoint", "sign_note",
        "verify_bundle", "verify_consistency", "verify_inclusion", "verify_receipt",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_all_is_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name])


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_every_exported_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_lazy_exports_are_the_parts_own_objects() -> None:
    assert refusalkit.DecisionPoint is DecisionPoint
    assert refusalkit.open_journal is open_journal
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = refusalkit.nope  # type: ignore[attr-defined]


def test_package_is_typed() -> None:
    assert files("refusalkit").joinpath("py.typed").is_file()
