"""The public API is what ``__all__`` says, pinned here so that a change to it is a conscious one.

As httpx does: every public module's ``__all__`` matches the list below; every name in it
resolves; every public name a module binds is in it; and no module imports another package's
internals (an underscore module is imported only from inside the package that holds it). The
exception is the shared internal layer, ``refusalkit._internal`` (and the root's own underscore
modules): any package may import it, and it imports nothing above the record model, so what
several packages share is internal without becoming public. A new package or public module fails
``test_every_public_module_is_pinned`` until it is added to ``PUBLIC``
(docs/design/architecture.md, Module rules). Names that moved stay importable with a
``DeprecationWarning`` (``DEPRECATED``) until the release CHANGELOG.md names.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from importlib.resources import files
from pathlib import Path

import pytest

import refusalkit
from refusalkit.decide import DecisionPoint
from refusalkit.journal import open_journal

PUBLIC: dict[str, list[str]] = {
    "refusalkit": [
        "Action", "ChatRuntime", "Decision", "DecisionPoint", "Keyring", "ReasonCode",
        "RefusalkitError", "__version__", "compare", "enforcer", "load_pack", "open_journal",
        "require_baseline", "verify_receipt",
    ],
    "refusalkit.approvals": [
        "DENIAL_SCHEMA", "GRANT_SCHEMA", "Answer", "AnswerKind", "ApprovalBook", "ApprovalCheck",
        "PendingRequest",
        "Resolution", "answer_problem", "claim_of", "needs_settling", "resolve",
    ],
    "refusalkit.chat": [
        "Attempt", "ChatResponse", "ChatRuntime", "EndpointResponder", "EthicsPack",
        "EthicsVerdict", "Identity", "LogRefusalSink", "OtelRefusalSink", "PredicateResult",
        "RefusalSink", "Reply", "Responder", "SafetyVerdict", "ScanFinding", "ToolCall",
        "TurnEvent", "UnreadableLine", "load_ethics_pack", "read_transcript", "redact", "replay",
        "scan",
    ],
    "refusalkit.cli": ["app", "main"],
    "refusalkit.client": ["AsyncClient", "Client"],
    "refusalkit.decide": [
        "CaseResult", "DecisionEncoder", "DecisionPoint", "LintCode", "LintWarning", "Pack",
        "decide_lines", "explain", "lint_pack", "lint_text", "load_cases", "load_pack",
        "mint_token", "public_key_from_seed", "run_cases",
    ],
    "refusalkit.enforce": [
        "Enforcer", "GroupJournal", "JournalWriter", "LocalEnforcer", "ResultChecker",
        "ResultMode", "ToolBlockedError", "enforcer", "fail_closed",
    ],
    "refusalkit.errors": [
        "ApprovalError", "CalibrationError", "CalibrationSetError", "ChatError", "ClaimTakenError",
        "ComparisonError",
        "EthicsPackError", "JournalError", "KeyringError", "MissingExtraError", "PolicyError",
        "NotAReceiptError", "ProofError",
        "RefusalkitError", "RequestError", "ResponderError", "RunnerError", "SafetyPackError",
        "ServiceError", "StoreError", "UsageError", "VerificationError",
    ],
    "refusalkit.examples": ["EXAMPLES_DIR", "example_path"],
    "refusalkit.integrations": ["CallerSource", "ToRequest", "ToolGuard", "json_args"],
    "refusalkit.integrations.langchain": ["RefusalMiddleware"],
    "refusalkit.integrations.openai_agents": [
        "RefusalApprovals", "refusal_guardrail", "refusal_guardrails",
    ],
    "refusalkit.integrations.pydantic_ai": ["RefusalCapability"],
    "refusalkit.journal": [
        "Checkpoint", "CheckpointScheduler", "Cosigner", "Entry", "EquivocationError", "Evidence",
        "Handoff", "Journal", "JournalAccess", "NotAnExtensionError",
        "NoteSignature", "NoteVerifier", "OpenedNote", "Receipt", "TilesReport",
        "UntrustedKeyError", "VerifyReport", "bundle_checkpoints", "decision_fields",
        "export_bundle", "export_tiles", "known_origins", "leaf_hash",
        "normalise_time", "open_checkpoint", "open_journal", "open_note",
        "parse_checkpoint_body", "parse_note", "parse_tile_path", "read_checkpoint_file",
        "read_tile", "sign_if_grown",
        "signer_state_dir", "tile_path",
        "valid_key_name", "verify_bundle", "verify_consistency", "verify_inclusion",
        "verify_proof", "verify_receipt",
    ],
    "refusalkit.keyring": [
        "KEYRING_ENV", "KEYRING_SCHEMA", "Keyring", "default_keyring_path", "resolve_keyring",
        "signing_key_id",
    ],
    "refusalkit.mcp_proxy": [
        "Bridge", "Caller", "Gate", "META_KEY", "PIN_MEMBERS", "Pin", "PinFile", "PinSet",
        "ProxyApp", "REFUSAL_CODE", "ResultMode", "GateOutcome", "check_result", "open_gate",
        "pending_path", "pin_problem", "refusal_error", "refusal_result", "serve_http",
        "serve_stdio", "tool_digest",
    ],
    "refusalkit.model": [
        "Action", "Approval", "DECISION_SCHEMA", "DEFAULT_TTL_S", "Decision", "EngineRef",
        "PolicyRef", "REASON_CODES_VERSION", "ReasonCode", "Request", "Subject",
        "TYPED_REFUSAL_PREFIX", "WhyStep", "action_digest", "canonical_json", "format_timestamp",
        "now_utc", "parse_duration", "parse_request", "refusal_line",
        "uuid7",
    ],
    "refusalkit.engines": [
        "Adapter", "AdapterFailure", "AgtAdapter", "CedarAdapter", "EngineKind", "EngineMapping",
        "EngineSpec", "OpaAdapter", "RegoAdapter", "load_mapping", "open_engine",
    ],
    "refusalkit.provenance": [
        "Baseline", "CalibrationPrompt", "CalibrationRun", "CalibrationSet", "CallableRunner",
        "ClassifierJudge", "DEFAULT_MIN_PROMPTS", "Directive", "DriftReport", "Expect", "Flip",
        "HaltReason", "InconclusiveReason", "Judge", "JudgeAudit", "JudgeRef", "JudgedResponse",
        "Judgement", "KeywordJudge", "OpenAIRunner", "RateComparison", "RefusalCount",
        "RefusalOutcome", "Refused", "Runner",
        "STARTER_SET_NAME", "TypedPrefixJudge", "Verdict", "arun_calibration", "audit_sample",
        "compare", "get_judge", "import_table", "import_xstest", "judge_names", "load_set",
        "read_labels", "record_baseline", "render_html", "require_baseline", "run_calibration",
        "serve_replay", "starter_set", "with_audit", "write_sheet",
    ],
    "refusalkit.redact": ["Redactor", "value_text"],
    "refusalkit.schemas": [
        "DECISION_SCHEMA_FILE", "PACK_SCHEMA_FILE", "SCHEMAS_DIR", "load_schema",
    ],
    "refusalkit.server": [
        "ApiKey", "ErrorCode", "KeyStore", "Scope", "ServiceConfig", "app_from_environment",
        "create_app", "parse_scopes", "serve",
    ],
    "refusalkit.witness": [
        "AddCheckpoint", "HttpAnswer", "Cosignature", "CosignerKey", "ProofSource",
        "RequestFormatError", "Witness", "WitnessDir", "WitnessOutcome", "collect_cosignatures",
        "cosign", "make_server", "parse_cosignature", "submit", "verify_cosignatures",
        "witnessed_sizes",
    ],
}  # fmt: skip

SRC = Path(refusalkit.__file__).resolve().parent
# (importer, imported internal module) pairs being removed on another branch; an entry that no
# longer occurs fails test_known_exceptions_still_occur, so the list only shrinks.
KNOWN_CROSS_IMPORTS: set[tuple[str, str]] = set()


def public_modules() -> list[str]:
    """Every module and package under refusalkit whose dotted name has no ``_`` part."""
    found = [info.name for info in pkgutil.walk_packages(refusalkit.__path__, "refusalkit.")]
    public = [name for name in found if not any(p.startswith("_") for p in name.split(".")[1:])]
    return sorted(["refusalkit", *public])


def test_every_public_module_is_pinned() -> None:
    assert public_modules() == sorted(PUBLIC)


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_all_is_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name])
    assert len(set(module.__all__)) == len(module.__all__), "a name is listed twice"


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_every_exported_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def _ours(module: str | None) -> bool:
    return (module or "").startswith("refusalkit")


def bound_public_names(path: Path) -> set[str]:
    """Names a module binds at top level that do not begin with ``_`` (defs, classes,
    assignments, and in a package's ``__init__`` its imports from refusalkit): each is either
    exported or should be private."""
    package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif package and isinstance(node, ast.ImportFrom) and _ours(node.module):
            names.update(alias.asname or alias.name for alias in node.names)
    return {name for name in names if not name.startswith("_")} - {"annotations"}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_every_public_name_is_exported(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__file__ is not None
    missing = bound_public_names(Path(module.__file__)) - set(module.__all__)
    assert missing == set(), f"{module_name} binds public names outside __all__"


def module_name_of(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def internal_imports(path: Path) -> set[str]:
    """The underscore modules a source file imports (``refusalkit.x._y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("refusalkit"):
            targets = [node.module or ""]
            targets += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("refusalkit")]
        else:
            continue
        found.update(t for t in targets if any(p.startswith("_") for p in t.split(".")[1:]))
    return found


def owner(internal: str) -> str:
    """The package that holds an internal module: the name up to its first ``_`` part."""
    parts = internal.split(".")
    first = next(i for i, part in enumerate(parts) if i and part.startswith("_"))
    return ".".join(parts[:first])


def cross_package_imports() -> set[tuple[str, str]]:
    pairs = set()
    for path in sorted(SRC.rglob("*.py")):
        importer = module_name_of(path)
        for internal in internal_imports(path):
            home = owner(internal)
            if importer != home and not importer.startswith(home + "."):
                pairs.add((importer, internal))
    return pairs


def test_no_package_imports_another_packages_internals() -> None:
    assert cross_package_imports() - KNOWN_CROSS_IMPORTS == set()


def test_known_exceptions_still_occur() -> None:
    assert cross_package_imports() >= KNOWN_CROSS_IMPORTS, "remove the fixed entries"


def test_the_import_rule_itself() -> None:
    assert owner("refusalkit.provenance._verdict") == "refusalkit.provenance"
    assert owner("refusalkit._version") == "refusalkit"  # root internals are shared by all
    assert owner("refusalkit.decide._engine") == "refusalkit.decide"


def test_the_shared_layer_is_everyones() -> None:
    assert owner("refusalkit._internal.records") == "refusalkit"
    assert owner("refusalkit._internal") == "refusalkit"


# What the shared layer may import: itself, the root's internals, and the packages below every
# part (the record model, the errors). Never a part, so importing it costs no part's dependencies.
SHARED_LAYER_MAY_IMPORT = ("refusalkit._", "refusalkit.model", "refusalkit.errors")


def test_the_shared_layer_imports_nothing_above_the_model() -> None:
    above = set()
    for path in sorted((SRC / "_internal").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _ours(node.module):
                module = node.module or ""
                if not module.startswith(SHARED_LAYER_MAY_IMPORT):
                    above.add((path.name, module))
    assert above == set()


# (module, name) -> (module, name) it now is; each warns and resolves until its removal.
DEPRECATED: dict[tuple[str, str], tuple[str, str]] = {
    ("refusalkit.decide", "Lines"): ("refusalkit._internal.source", "Lines"),
    ("refusalkit.decide", "Subjects"): ("refusalkit._internal.records", "Subjects"),
    ("refusalkit.decide", "make_decision"): ("refusalkit._internal.records", "checked_decision"),
    ("refusalkit.decide", "make_step"): ("refusalkit._internal.records", "make_step"),
    ("refusalkit.decide", "read_pack_source"): ("refusalkit._internal.source", "read_pack_source"),
    ("refusalkit.decide", "stamp"): ("refusalkit._internal.stamps", "stamp"),
    ("refusalkit.model", "unavailable_decision"): (
        "refusalkit._internal.failclosed", "failed_decision",
    ),
    ("refusalkit.server", "ApiError"): ("refusalkit._internal.apierrors", "ApiError"),
    ("refusalkit.server", "Authenticator"): ("refusalkit._internal.auth", "Authenticator"),
    ("refusalkit.server", "JournalAccess"): ("refusalkit.journal", "JournalAccess"),
    ("refusalkit.server", "error_response"): ("refusalkit._internal.apierrors", "error_response"),
    ("refusalkit.mcp_proxy", "Verdict"): ("refusalkit.mcp_proxy", "GateOutcome"),
    ("refusalkit.integrations", "Caller"): ("refusalkit.integrations", "CallerSource"),
    ("refusalkit.witness", "Answer"): ("refusalkit.witness", "HttpAnswer"),
}  # fmt: skip


@pytest.mark.parametrize(("old", "new"), sorted(DEPRECATED.items()))
def test_a_moved_name_warns_and_still_works(old: tuple[str, str], new: tuple[str, str]) -> None:
    module = importlib.import_module(old[0])
    assert old[1] not in module.__all__
    with pytest.warns(DeprecationWarning, match=rf"{old[0]}\.{old[1]} is deprecated"):
        found = getattr(module, old[1])
    assert found is getattr(importlib.import_module(new[0]), new[1])


def test_every_moved_name_is_in_the_changelog() -> None:
    changelog = (SRC.parent.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = changelog.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    deprecated = unreleased.split("### Deprecated", 1)[1].split("\n### ", 1)[0]
    for module, name in DEPRECATED:
        assert f"`{module}.{name}`" in deprecated, (module, name)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import refusalkit.decide  # noqa: PLC0415

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = refusalkit.decide.nope  # type: ignore[attr-defined]


def test_lazy_exports_are_the_parts_own_objects() -> None:
    assert refusalkit.DecisionPoint is DecisionPoint
    assert refusalkit.open_journal is open_journal
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = refusalkit.nope  # type: ignore[attr-defined]


def test_package_is_typed() -> None:
    assert files("refusalkit").joinpath("py.typed").is_file()


def test_the_version_has_one_source() -> None:
    """pyproject.toml takes the version from src/refusalkit/_version.py (hatch), so the installed
    metadata, ``refusalkit.__version__`` and the engine's version agree."""
    import tomllib  # noqa: PLC0415
    from importlib.metadata import version  # noqa: PLC0415

    project = tomllib.loads((SRC.parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/refusalkit/_version.py"
    assert version("refusalkit") == refusalkit.__version__
