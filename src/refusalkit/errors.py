"""The one exception tree of refusalkit.

Every error says what went wrong (its message) and what to do about it (its ``hint``); the CLI
prints both, never a traceback::

    RefusalkitError
    ├── UsageError                 bad arguments to a command or a call
    │   ├── MissingExtraError      an optional dependency is not installed (names the extra)
    │   └── RequestFormatError     a witness add-checkpoint body that breaks the format
    │                              (refusalkit.witness; answered 400)
    ├── KeyringError               keyring missing, unreadable, too open, or a key id unknown
    ├── PolicyError                a policy pack that does not load (names file, line and key)
    ├── RequestError               a request that is not well formed (decided input-rejected)
    ├── AdapterFailure             an external engine gave no clean verdict (refusalkit.engines;
    │                              raised inside an adapter, decided deny + unavailable)
    ├── ToolBlockedError           a tool call was blocked: the run must end (refusalkit.enforce;
    │                              carries the journaled decision)
    ├── JournalError
    │   ├── StoreError             a store that cannot be opened, or is corrupt or foreign
    │   ├── ProofError             a proof asked for sizes or indices the log does not have
    │   ├── NotAReceiptError       a file given as a receipt that is none (an error answer, say)
    │   ├── VerificationError      a proof, checkpoint or log that does not verify (first bad index)
    │   │   ├── UntrustedKeyError      signed by a key the caller did not pass (refusalkit.journal)
    │   │   ├── NotAnExtensionError    a tree that does not extend a trusted checkpoint (journal)
    │   │   └── EquivocationError      two checkpoints that contradict each other (journal)
    │   └── ClaimTakenError        a one-time claim (an approval grant) was already used
    ├── ApprovalError              an approval answer that may not be recorded (unknown request,
    │                              the agent approving itself, lapsed, already answered)
    ├── ChatError
    │   ├── SafetyPackError        the fixed safety pack is missing or altered: the runtime stops
    │   ├── EthicsPackError        an ethics pack that does not validate
    │   └── ResponderError         the responder (callable or endpoint) failed
    ├── CalibrationError
    │   ├── CalibrationSetError    a calibration set that does not load
    │   ├── RunnerError            a calibration run that cannot go on
    │   └── ComparisonError        runs that may not be compared (set hash, judge)
    └── ServiceError               the HTTP service cannot start or serve
        (ApiError                  internal: an HTTP answer with a typed JSON error body, of the
                                   service and the MCP proxy; it is a RefusalkitError too)

The errors that need a record of their package (a decision, a checkpoint's evidence) live in that
package and are exported from it; every other one lives here. ``tests/test_errors_tree.py`` walks
every public module and checks that each exception it exports is drawn here and is under
``RefusalkitError``.

Decisions never raise: any error inside a decision becomes ``deny`` + ``unavailable``.
"""

from __future__ import annotations

__all__ = [
    "ApprovalError",
    "CalibrationError",
    "CalibrationSetError",
    "ChatError",
    "ClaimTakenError",
    "ComparisonError",
    "EthicsPackError",
    "JournalError",
    "KeyringError",
    "MissingExtraError",
    "NotAReceiptError",
    "PolicyError",
    "ProofError",
    "RefusalkitError",
    "RequestError",
    "ResponderError",
    "RunnerError",
    "SafetyPackError",
    "ServiceError",
    "StoreError",
    "UsageError",
    "VerificationError",
]


class RefusalkitError(Exception):
    """Base of every refusalkit error; ``hint`` tells the user what to do next."""

    default_hint = "See `refusalkit --help`."
    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def __str__(self) -> str:
        return self.message


class UsageError(RefusalkitError):
    """Arguments that do not make sense together, or a file that is not there."""

    default_hint = "Check the command's arguments with --help."


class MissingExtraError(UsageError):
    """A command needs an optional dependency that is not installed; names the extra to add."""

    def __init__(self, module: str, extra: str) -> None:
        self.module, self.extra = module, extra
        super().__init__(
            f"this needs the optional dependency {module!r}, which is not installed",
            hint=f"Install the {extra!r} extra: pip install 'refusalkit[{extra}]'",
        )


class KeyringError(RefusalkitError):
    """The keyring cannot be used: missing, unreadable, readable by others, or lacking a key."""

    default_hint = "Create one with `refusalkit keys init PATH` and pass --keyring PATH."


class PolicyError(RefusalkitError):
    """A policy pack that does not load; names the file, the line and the key at fault."""

    default_hint = "Fix the pack, then run `refusalkit policy check PACK`."

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file, self.line, self.key = file, line, key
        where = ":".join(str(p) for p in (file, line) if p is not None)
        prefix = f"{where}: " if where else ""
        at_key = f" (at {key})" if key else ""
        super().__init__(f"{prefix}{message}{at_key}", hint=hint)


class RequestError(RefusalkitError):
    """A request that is not well formed; a decision point answers it ``deny`` + ``input-rejected``
    by the ``@request`` stage (the caller must change it; a retry of the same bytes cannot help)."""

    default_hint = "Send one JSON object with a string `tool`; `args` and `caller` must be objects."


class JournalError(RefusalkitError):
    """Base of the journal's errors."""

    default_hint = "Run `refusalkit journal verify STORE` to check the journal."


class StoreError(JournalError):
    """A journal store that cannot be opened, or whose contents are corrupt or foreign."""

    default_hint = "Give the path of a refusalkit journal (or a postgresql:// URL)."


class ProofError(JournalError):
    """A proof was asked for an index or sizes that the log does not have."""

    default_hint = "Ask for sizes between 1 and the journal's current size."


class VerificationError(JournalError):
    """Something does not verify; ``index`` is the first bad entry index when one is known."""

    exit_code = 1
    default_hint = "Treat the journal as tampered with from the index named; keep a copy."

    def __init__(self, message: str, *, index: int | None = None, hint: str | None = None) -> None:
        self.index = index
        super().__init__(message, hint=hint)


class ClaimTakenError(JournalError):
    """An append that claims something once (a grant's use) found it claimed already; nothing
    was appended (docs/design/approvals.md)."""

    default_hint = "Ask for a new approval: a grant is used once."

    def __init__(self, claim: str, index: int | None, *, hint: str | None = None) -> None:
        where = f" by the entry at journal index {index}" if index is not None else ""
        super().__init__(f"{claim} was already claimed{where}", hint=hint)
        self.claim = claim
        self.index = index


class ApprovalError(RefusalkitError):
    """An approval answer that may not be recorded (docs/design/approvals.md)."""

    default_hint = "Run `refusalkit approvals list STORE` to see the pending requests."


class NotAReceiptError(JournalError):
    """A file given as a receipt that is something else (an error answer, another record, not
    JSON): the wrong input, not evidence of tampering."""

    default_hint = (
        "Fetch the receipt again with a key of scope `read`: "
        "`curl -H 'Authorization: Bearer KEY' URL/v1/journal/receipt?index=N`."
    )


class ChatError(RefusalkitError):
    """Base of the chat turn guard's errors."""


class SafetyPackError(ChatError):
    """The fixed safety pack is missing, unreadable or altered; the runtime refuses to start."""

    default_hint = "Reinstall refusalkit: the safety pack ships with it and is not editable."


class EthicsPackError(ChatError):
    """An ethics pack that does not validate."""

    default_hint = "Fix the ethics pack; see docs/chat.md for its format."


class ResponderError(ChatError):
    """The responder (a callable or an OpenAI-compatible endpoint) failed."""

    default_hint = "Check that the endpoint is up and the model name is right."


class CalibrationError(RefusalkitError):
    """Base of the refusal provenance errors."""


class CalibrationSetError(CalibrationError):
    """A calibration set that does not load."""

    default_hint = "Each line must be {id, prompt, category, expect}; see docs/provenance.md."


class RunnerError(CalibrationError):
    """A calibration run that cannot go on."""

    default_hint = "Check the endpoint; a rerun resumes from the cache and loses nothing."


class ComparisonError(CalibrationError):
    """Two runs that may not be compared (different set hash, judge or judge version)."""

    default_hint = "Compare runs of the same set and judge, or pass --force to compare anyway."


class ServiceError(RefusalkitError):
    """The HTTP service cannot start or serve."""

    default_hint = "Check the policy pack, the journal store and the keys file."
