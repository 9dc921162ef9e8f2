"""Pydantic models of the HTTP API: they publish the OpenAPI document and check query input.

Decision bodies are built by ``Decision.to_dict`` and sent as pre-serialised JSON (the hot path);
``DecisionModel`` describes that wire form (docs/design/decision.md) for clients and for
schemathesis.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from refusalkit.model import Action, ReasonCode

__all__ = [
    "ApprovalAnswerModel",
    "ApprovalsModel",
    "BatchRequestModel",
    "BatchResponseModel",
    "CheckpointModel",
    "ConsistencyProofModel",
    "DecideRequestModel",
    "DecisionModel",
    "DecisionsPageModel",
    "EntriesModel",
    "ErrorModel",
    "HealthModel",
    "InclusionProofModel",
    "ReadyModel",
    "ReceiptModel",
    "ReloadModel",
    "StatsModel",
]

_FROZEN = ConfigDict(frozen=True)


class _ErrorBody(BaseModel):
    model_config = _FROZEN
    code: str = Field(description="Stable identifier, e.g. `unauthenticated`, `batch-too-large`.")
    message: str
    hint: str = Field(description="What to do about it.")
    details: Any = None


class ErrorModel(BaseModel):
    """Every non-2xx answer."""

    model_config = _FROZEN
    error: _ErrorBody


class CallerModel(BaseModel):
    """Who calls: agent, session, and optionally a compact JWS attesting it."""

    model_config = ConfigDict(frozen=True, extra="allow")
    agent: str | None = None
    session: str | None = None
    token: str | None = None


class DecideRequestModel(BaseModel):
    """One request to decide (docs/design/policy.md, Request). Other fields are kept for rules to
    test."""

    model_config = ConfigDict(frozen=True, extra="allow")
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    caller: CallerModel = Field(default_factory=CallerModel)
    input: str | None = None


class BatchRequestModel(BaseModel):
    """Several requests, decided in order (at most the service's `max_batch`)."""

    model_config = _FROZEN
    requests: list[DecideRequestModel]


class WhyStepModel(BaseModel):
    """One considered rule or stage (docs/design/decision.md, WhyStep); values are redaction
    tokens."""

    model_config = _FROZEN
    rule: str
    effect: str
    matched: bool
    decisive: bool
    field: str | None
    field_class: str | None
    value: str | None
    test: str | None
    missing: bool | None = None
    detail: str | None = None


class _PolicyRef(BaseModel):
    model_config = _FROZEN
    id: str
    version: str
    digest: str


class _EngineRef(BaseModel):
    model_config = _FROZEN
    name: str
    version: str


class _Subject(BaseModel):
    model_config = _FROZEN
    agent: str | None
    session: str | None


class DecisionModel(BaseModel):
    """A decision, wire format `refusalkit.decision/v1` (docs/design/decision.md)."""

    model_config = _FROZEN
    schema_: Literal["refusalkit.decision/v1"] = Field(alias="schema")
    decision_id: str
    action: Action
    reason_code: ReasonCode | None
    reason_codes_version: int
    matched_rule: str
    message: str | None
    retryable: bool
    why_trail: list[WhyStepModel]
    policy: _PolicyRef
    engine: _EngineRef
    subject: _Subject
    request_digest: str
    decided_at: str
    client_request_id: str | None = Field(
        default=None,
        description="The binding of the caller's Refusalkit-Request-Id to this request "
        "(docs/design/client.md); only when the caller sent one.",
    )


class BatchResponseModel(BaseModel):
    """The decisions of a batch, in request order, and their journal indices."""

    model_config = _FROZEN
    decisions: list[DecisionModel]
    indices: list[int]


class CheckpointModel(BaseModel):
    """The latest signed checkpoint (C2SP signed-note text) and its parsed fields."""

    model_config = _FROZEN
    checkpoint: str
    origin: str
    tree_size: int
    root_hash: str = Field(description="Base64 SHA-256 root of the first tree_size entries.")
    key_name: str = Field(description="The signed-note key name of the signature.")
    public_key: str = Field(description="Base64 raw Ed25519 key that signs checkpoints.")


class EntryModel(BaseModel):
    """One journal entry: its exact bytes (base64) and the record they encode."""

    model_config = _FROZEN
    index: int
    entry_b64: str
    record: dict[str, Any]


class EntriesModel(BaseModel):
    """Entries `[start, end)`."""

    model_config = _FROZEN
    start: int
    end: int
    entries: list[EntryModel]


class InclusionProofModel(BaseModel):
    """RFC 9162 §2.1.3 inclusion proof (hex hashes)."""

    model_config = _FROZEN
    index: int
    tree_size: int
    leaf_hash: str
    hashes: list[str]


class ConsistencyProofModel(BaseModel):
    """RFC 9162 §2.1.4 consistency proof (hex hashes)."""

    model_config = _FROZEN
    old: int
    new: int
    hashes: list[str]


class ReceiptModel(BaseModel):
    """An inclusion proof bound to a signed checkpoint that covers the entry."""

    model_config = ConfigDict(frozen=True, extra="allow")
    index: int
    tree_size: int
    leaf_hash: str
    hashes: list[str]
    checkpoint: str
    origin: str
    key_name: str
    public_key: str


class StatsModel(BaseModel):
    """Decision counts over a time window (`since`/`until`, RFC 3339; null = unbounded)."""

    model_config = _FROZEN
    since: str | None
    until: str | None
    total: int
    by_action: dict[str, int]
    by_reason_code: dict[str, int]
    by_rule: dict[str, int]
    by_schema: dict[str, int] = Field(default_factory=dict, description="Entries by record kind.")


class DecisionItemModel(BaseModel):
    """A journal record and its index."""

    model_config = _FROZEN
    index: int
    record: dict[str, Any]


class DecisionsPageModel(BaseModel):
    """Records matching the filters, in index order; `truncated` when more matched than `limit`."""

    model_config = _FROZEN
    items: list[DecisionItemModel]
    truncated: bool


class HealthModel(BaseModel):
    """The process is up."""

    model_config = _FROZEN
    status: Literal["ok"]


class ReadyModel(BaseModel):
    """Whether the pack and the store are usable; `problems` says what is not."""

    model_config = _FROZEN
    ready: bool
    pack: dict[str, str] | None
    journal_size: int | None
    problems: list[str]


class ReloadModel(BaseModel):
    """A reload that took effect."""

    model_config = _FROZEN
    loaded: bool
    digest: str
    previous_digest: str


class PendingApprovalModel(BaseModel):
    """A request for approval no one has answered (docs/design/approvals.md); `args` as a
    why-trail shows them: redaction tokens unless their class is revealed."""

    model_config = _FROZEN
    request_id: str
    journal_index: int
    tool: str | None
    agent: str | None
    session: str | None
    rule: str
    message: str | None
    args: dict[str, Any]
    action_digest: str
    policy: str
    asked_at: str
    expires_at: str
    asked: int = Field(description="How many requests for the same action the journal holds.")


class ApprovalsModel(BaseModel):
    """The pending requests for approval, oldest first."""

    model_config = _FROZEN
    pending: list[PendingApprovalModel]


class GrantBodyModel(BaseModel):
    """Optional: how long the grant may be used (`90s`, `15m`, `2h`), at most the rule's ttl."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ttl: str | None = Field(default=None, max_length=16)


class DenyBodyModel(BaseModel):
    """Optional: why, in words the agent's user will read."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    reason: str | None = Field(default=None, max_length=1000)


class ApprovalAnswerModel(BaseModel):
    """A grant or denial, journaled and signed; the approver is the API key's name."""

    model_config = _FROZEN
    request_id: str
    answer: Literal["grant", "denial"]
    journal_index: int
    request_index: int
    approver: str
    expires_at: str | None
    record: dict[str, Any]
