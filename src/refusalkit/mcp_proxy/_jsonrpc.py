"""JSON-RPC messages of ``mcp wrap``'s stdio lines, written with orjson.

A speed twin of the SDK's writer (``model_dump_json(by_alias=True, exclude_unset=True)``), half
its CPU on the plain envelopes: ``dump_message`` writes the members a request, a notification or
a result has, in the model's order, with orjson; any other message, and a value orjson cannot
write exactly (an integer beyond 64 bits, a non-string key), goes to the SDK's writer.

Lines are read with the SDK's own validation (``jsonrpc_message_adapter.validate_json``): orjson
and building the SDK's model from what it read cost as much as that validation on these small
envelopes (measured: docs/performance.md, The MCP proxy), so reading stays one implementation.

Every message is written from its parsed form, never passed on as the bytes it came in: a line
with a member twice is read last-wins, and a server that read it first-wins would otherwise run
a call other than the one decided (the same holds for what a server answers and the client
reads). ``tests/mcp_proxy/test_jsonrpc.py`` pins the writer to the SDK's.
"""

from __future__ import annotations

import orjson
from mcp_types import JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

__all__ = ["dump_message"]

_ORDER: dict[type, tuple[str, ...]] = {
    kind: tuple(kind.model_fields)
    for kind in (JSONRPCRequest, JSONRPCNotification, JSONRPCResponse)
}


def dump_message(message: JSONRPCMessage) -> bytes:
    """The message's line (without its newline), as ``model_dump_json(by_alias=True,
    exclude_unset=True)`` writes it."""
    order = _ORDER.get(type(message))
    if order is not None:
        fields = message.model_fields_set
        members = {name: getattr(message, name) for name in order if name in fields}
        try:
            return orjson.dumps(members)
        except TypeError:  # orjson.JSONEncodeError too: a value it cannot write as the SDK does
            pass
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
