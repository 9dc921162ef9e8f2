"""The chat turn guard: safety and ethics packs, the typed refusal surface, hedges, turn events.

docs/design/chat.md. Wrap a responder (a callable or an OpenAI-compatible endpoint) in a
``ChatRuntime``; every turn is checked against the fixed safety pack (five boundaries, pinned
digest) and a per-deployment ethics pack, and a runtime-checkable violation replaces what the user
sees with a deterministic typed refusal while the articulation is kept as evidence.
"""

from __future__ import annotations

from refusalkit.chat._attempt import Attempt, combined_policy_ref, refusal_decision
from refusalkit.chat._detect import Finding, find_private_data, find_secrets, looks_like_refusal
from refusalkit.chat._ethics import (
    DEFAULT_ETHICS_PACK_PATH,
    ETHICS_PACK_SCHEMA,
    Commitment,
    EthicsPack,
    check_ethics,
    default_ethics_pack,
    load_ethics_pack,
    load_ethics_pack_or_default,
)
from refusalkit.chat._events import TURN_EVENT_SCHEMA, TurnEvent, TurnLog, text_digest
from refusalkit.chat._predicates import ETHICS_PREDICATES
from refusalkit.chat._replay import read_transcript, replay
from refusalkit.chat._responder import EndpointResponder, Reply, Responder
from refusalkit.chat._response import CHAT_RESPONSE_SCHEMA, ChatResponse
from refusalkit.chat._runtime import ChatRuntime, rearticulation_note
from refusalkit.chat._safety import (
    SAFETY_BOUNDARIES,
    SAFETY_PACK_PATH,
    SAFETY_PACK_SHA256,
    SafetyContext,
    SafetyPack,
    check_safety,
    load_safety_pack,
)
from refusalkit.chat._scrub import Scrubber, redact_text
from refusalkit.chat._surface import (
    REFUSAL_SEPARATOR,
    Identity,
    Refusal,
    build_refusal,
    inject_hedge,
    refusal_tags,
)
from refusalkit.chat._telemetry import LogRefusalSink, OtelRefusalSink, RefusalSink
from refusalkit.chat._verdict import (
    EthicsVerdict,
    LastRefusal,
    Memory,
    PredicateResult,
    SafetyVerdict,
    ToolCall,
    Turn,
)

__all__ = [
    "CHAT_RESPONSE_SCHEMA",
    "DEFAULT_ETHICS_PACK_PATH",
    "ETHICS_PACK_SCHEMA",
    "ETHICS_PREDICATES",
    "REFUSAL_SEPARATOR",
    "SAFETY_BOUNDARIES",
    "SAFETY_PACK_PATH",
    "SAFETY_PACK_SHA256",
    "TURN_EVENT_SCHEMA",
    "Attempt",
    "ChatResponse",
    "ChatRuntime",
    "Commitment",
    "EndpointResponder",
    "EthicsPack",
    "EthicsVerdict",
    "Finding",
    "Identity",
    "LastRefusal",
    "LogRefusalSink",
    "Memory",
    "OtelRefusalSink",
    "PredicateResult",
    "Refusal",
    "RefusalSink",
    "Reply",
    "Responder",
    "SafetyContext",
    "SafetyPack",
    "SafetyVerdict",
    "Scrubber",
    "ToolCall",
    "Turn",
    "TurnEvent",
    "TurnLog",
    "build_refusal",
    "check_ethics",
    "check_safety",
    "combined_policy_ref",
    "default_ethics_pack",
    "find_private_data",
    "find_secrets",
    "inject_hedge",
    "load_ethics_pack",
    "load_ethics_pack_or_default",
    "load_safety_pack",
    "looks_like_refusal",
    "read_transcript",
    "rearticulation_note",
    "redact_text",
    "refusal_decision",
    "refusal_tags",
    "replay",
    "text_digest",
]
