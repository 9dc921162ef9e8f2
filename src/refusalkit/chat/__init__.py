"""The chat turn guard: safety and ethics packs, the typed refusal surface, hedges, turn events.

docs/design/chat.md; hostile input, detectors and redaction: docs/design/chat-guard.md. Wrap a
responder (a callable or an OpenAI-compatible endpoint) in a ``ChatRuntime``; every turn is
checked against the fixed safety pack (five boundaries, pinned digest) and a per-deployment ethics
pack, and a runtime-checkable violation replaces what the user sees with a deterministic typed
refusal while the articulation is kept as evidence. ``scan`` and ``redact`` are the shared
scanner (credentials and personal data as kinds, spans and keyed tokens) that chat turns and tool
results both go through.
"""

from __future__ import annotations

from refusalkit.chat._attempt import Attempt
from refusalkit.chat._ethics import EthicsPack, load_ethics_pack
from refusalkit.chat._events import TurnEvent
from refusalkit.chat._replay import read_transcript, replay
from refusalkit.chat._responder import EndpointResponder, Reply, Responder
from refusalkit.chat._response import ChatResponse
from refusalkit.chat._runtime import ChatRuntime
from refusalkit.chat._scan import ScanFinding, redact, scan
from refusalkit.chat._surface import Identity
from refusalkit.chat._telemetry import LogRefusalSink, OtelRefusalSink, RefusalSink
from refusalkit.chat._verdict import EthicsVerdict, PredicateResult, SafetyVerdict, ToolCall

__all__ = [
    "Attempt",
    "ChatResponse",
    "ChatRuntime",
    "EndpointResponder",
    "EthicsPack",
    "EthicsVerdict",
    "Identity",
    "LogRefusalSink",
    "OtelRefusalSink",
    "PredicateResult",
    "RefusalSink",
    "Reply",
    "Responder",
    "SafetyVerdict",
    "ScanFinding",
    "ToolCall",
    "TurnEvent",
    "load_ethics_pack",
    "read_transcript",
    "redact",
    "replay",
    "scan",
]
