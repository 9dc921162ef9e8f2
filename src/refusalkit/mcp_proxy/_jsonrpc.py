"""JSON-RPC messages of ``mcp wrap``'s stdio lines, read and written with orjson.

A speed twin of the SDK's own reading and writing (``jsonrpc_message_adapter.validate_json``,
``model_dump_json(by_alias=True, exclude_unset=True)``), which cost some 20 microseconds of the
four messages of every ``tools/call``. ``parse_message`` takes only the plain envelopes (a
request, a notification, a result: exactly their members, ``"jsonrpc": "2.0"``, an integer or
string id, an object or null ``params``, an object ``result``) and builds the SDK's own model
from them unvalidated, because these checks are all its validation would make; anything else
(an error, an extra or missing member, a boolean id, a number orjson would read otherwise:
an integer of 19 digits or more) goes to the SDK's validation, as before. ``dump_message``
writes the members a message has, in the model's order, with orjson; a value orjson cannot write
exactly (an integer beyond 64 bits, a non-string key) goes to the SDK's writer.

Every message is written from its parsed form, never passed on as the bytes it came in: a line
with a member twice is read last-wins here, and a server that read it first-wins would otherwise
run a call other than the one decided (the same holds for what a server answers and the client
reads). ``tests/mcp_proxy/test_jsonrpc.py`` pins both to the SDK's.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from mcp_types import (
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

__all__ = ["dump_message", "parse_message"]

_LONG_NUMBER = re.compile(rb"[0-9]{19}")  # orjson reads an integer beyond 64 bits as a float
_REQUEST = frozenset({"jsonrpc", "id", "method"})
_REQUEST_PARAMS = _REQUEST | {"params"}
_NOTIFICATION = frozenset({"jsonrpc", "method"})
_NOTIFICATION_PARAMS = _NOTIFICATION | {"params"}
_RESPONSE = frozenset({"jsonrpc", "id", "result"})
_PLAIN = (JSONRPCRequest, JSONRPCNotification, JSONRPCResponse)
_ORDER: dict[type, tuple[str, ...]] = {kind: tuple(kind.model_fields) for kind in _PLAIN}


def parse_message(line: bytes) -> JSONRPCMessage:
    """One line's message, as ``jsonrpc_message_adapter.validate_json`` reads it (and raising
    what it raises on a malformed one)."""
    if _LONG_NUMBER.search(line) is None:
        try:
            found = orjson.loads(line)
        except orjson.JSONDecodeError:
            found = None
        if isinstance(found, dict):
            message = _plain(found)
            if message is not None:
                return message
    return jsonrpc_message_adapter.validate_json(line, by_name=False)


def _plain(found: dict[str, Any]) -> JSONRPCMessage | None:
    """The plain envelope ``found`` is, or None when the SDK's validation must say."""
    if found.get("jsonrpc") != "2.0":
        return None
    keys = found.keys()
    if keys == _RESPONSE:
        ok = _is_id(found["id"]) and isinstance(found["result"], dict)
        return JSONRPCResponse.model_construct(None, **found) if ok else None
    if not isinstance(found.get("method"), str) or not _is_params(found.get("params")):
        return None
    if keys in (_REQUEST, _REQUEST_PARAMS):
        return JSONRPCRequest.model_construct(None, **found) if _is_id(found["id"]) else None
    if keys in (_NOTIFICATION, _NOTIFICATION_PARAMS):
        return JSONRPCNotification.model_construct(None, **found)
    return None


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_params(value: Any) -> bool:
    return value is None or isinstance(value, dict)


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
