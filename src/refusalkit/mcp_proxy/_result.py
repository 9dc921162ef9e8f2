"""What the model sees on a refused call: an ``isError`` ``CallToolResult`` (docs/design/mcp.md);
on a refused ``resources/read`` or ``prompts/get``, a JSON-RPC error carrying the same refusal.

Never a JSON-RPC error: protocol errors do not reach the model, and clients drop the session on
them. The text content is the refusal line (``refusalkit.model.refusal_line``); the redacted
decision and its journal index ride in ``_meta["io.refusalkit/decision"]``, and in
``structuredContent`` too when the tool is known to declare no output schema (a refusal would
not match one).
"""

from __future__ import annotations

from typing import Any

from refusalkit.mcp_proxy._gate import GateOutcome
from refusalkit.model import refusal_line

__all__ = [
    "META_KEY",
    "REFUSAL_CODE",
    "REFUSAL_SCHEMA",
    "refusal_error",
    "refusal_meta",
    "refusal_result",
]

META_KEY = "io.refusalkit/decision"
"""The ``_meta`` key of a refusal (a reverse-DNS prefix, as MCP reserves for extensions)."""

REFUSAL_SCHEMA = "refusalkit.mcp-refusal/v1"

REFUSAL_CODE = -32010
"""The JSON-RPC error code of a refused ``resources/read`` or ``prompts/get`` (JSON-RPC 2.0 §5.1:
the implementation-defined server-error range, -32000 to -32099; MCP's SDKs use none of -32010)."""


def refusal_meta(verdict: GateOutcome) -> dict[str, Any]:
    """The object under ``_meta["io.refusalkit/decision"]``: schema, decision, journal index."""
    return {
        "schema": REFUSAL_SCHEMA,
        "journal_index": verdict.journal_index,
        "decision": verdict.decision.to_dict(),
    }


def refusal_result(verdict: GateOutcome, *, structured: bool) -> dict[str, Any]:
    """The ``CallToolResult`` (wire form) that answers a refused call."""
    meta = refusal_meta(verdict)
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": refusal_line(verdict.decision)}],
        "isError": True,
        "_meta": {META_KEY: meta},
        "resultType": "complete",  # required from protocol 2026-07-28 on; ignored before
    }
    if structured:
        result["structuredContent"] = {META_KEY: meta}
    return result


def refusal_error(verdict: GateOutcome) -> dict[str, Any]:
    """The JSON-RPC ``error`` object that answers a refused ``resources/read`` or ``prompts/get``:
    its message is the refusal line, its ``data`` holds the refusal under the ``_meta`` key.

    Not a result: neither method's result has a place for an error a model would read, and the
    client (not the model) asked for the resource or prompt.
    """
    return {
        "code": REFUSAL_CODE,
        "message": refusal_line(verdict.decision),
        "data": {META_KEY: refusal_meta(verdict)},
    }
