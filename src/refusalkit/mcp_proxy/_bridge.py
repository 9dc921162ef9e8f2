"""The bridge: JSON-RPC messages between an MCP client and a server, through the gate.

Message level, not session level: the bridge reads the SDK transports' ``SessionMessage``s on
both sides and passes every message through unchanged (resources, prompts, pings, notifications,
progress, cancellation, sampling and elicitation requests from the server, and whatever a later
protocol revision adds) except two (docs/design/mcp.md):

- ``tools/call``, ``resources/read`` and ``prompts/get``: decided and journaled by the gate
  first; forwarded when allowed; when refused, answered by the proxy with an ``isError``
  ``CallToolResult`` (a call) or a JSON-RPC error carrying the refusal (a read, a prompt). Each
  is decided in its own task, so a slow journal holds up no other message; a
  ``notifications/cancelled`` for a request still being decided makes the proxy drop it (never
  forwarded, never answered, as MCP's cancellation allows).
- the answers to ``tools/call``, ``resources/read`` and ``prompts/get``: checked by the gate
  (scanner, result filters) and passed on redacted, or replaced by a refusal.
- the answers to ``tools/list``, ``resources/list``, ``resources/templates/list`` and
  ``prompts/list``: what the agent may not use is removed (tools also when they differ from
  their pins), and which tools declare an output schema is remembered (a refusal of one carries
  no ``structuredContent``).
- any answer carrying ``io.refusalkit/decision`` in ``_meta`` or ``structuredContent``: the key
  is removed, so a hostile server cannot forge a refusal (or an allow) in refusalkit's name.

On Streamable HTTP the downstream transport routes a message to the POST stream of the request
it belongs to by ``related_request_id``: the bridge sets it for progress notifications (by the
request's ``progressToken``); other server-initiated messages go to the session's GET stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

from refusalkit.mcp_proxy._gate import Caller, Gate, GateOutcome
from refusalkit.mcp_proxy._loop import asyncio_loop
from refusalkit.mcp_proxy._result import META_KEY, refusal_error, refusal_result

__all__ = ["Bridge", "Receiver", "Sender", "describe_malformed"]

log = logging.getLogger("refusalkit.mcp")

# How a transport says its peer went away: the end of the session, not an error.
_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
_DECIDED = frozenset({"tools/call", "resources/read", "prompts/get"})
_LISTS = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})


class Receiver(Protocol):
    """A transport's read side: ``SessionMessage``s, or an ``Exception`` for a bad frame."""

    def __aiter__(self) -> AsyncIterator[SessionMessage | Exception]: ...


class Sender(Protocol):
    """A transport's write side."""

    async def send(self, item: SessionMessage, /) -> None: ...


class _Calls:
    """The decisions in flight of one bridge, each in its own task.

    On asyncio a plain ``asyncio`` task each (a third of the CPU of an anyio task group's
    ``start_soon``, which the hot path paid once a call), kept here so that none outlives the
    bridge: when it ends, those still running are cancelled and waited for, and the first that
    failed ends the bridge and is raised, as a task group would. On another event loop, the task
    group's own tasks.
    """

    def __init__(self, tg: TaskGroup | None) -> None:
        self._tg = tg
        self._running: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None
        self.failed = anyio.Event()

    @classmethod
    def of(cls, tg: TaskGroup) -> _Calls:
        """Plain tasks on asyncio, ``tg``'s otherwise."""
        return cls(None if asyncio_loop() is not None else tg)

    def start(self, call: Coroutine[Any, Any, None]) -> None:
        """Run ``call`` beside the bridge's pumps."""
        if self._tg is not None:
            self._tg.start_soon(lambda: call)
            return
        task = asyncio.get_running_loop().create_task(call)
        self._running.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if task.cancelled() or task.exception() is None or self._failure is not None:
            return
        self._failure = task.exception()
        self.failed.set()

    async def close(self) -> None:
        """Cancel the calls still in flight and wait for them."""
        for task in self._running:
            task.cancel()
        if self._running:
            await asyncio.wait(self._running)

    def raise_failure(self) -> None:
        """Raise the first call that failed, if one did."""
        if self._failure is not None:
            raise self._failure


class Bridge:
    """One MCP session between a client (downstream) and a server (upstream)."""

    def __init__(self, gate: Gate, caller: Caller) -> None:
        self.gate = gate
        self.caller = caller
        self._list_ids: dict[RequestId, str] = {}
        self._checked: dict[RequestId, tuple[str, str, GateOutcome]] = {}
        self._deciding: set[RequestId] = set()
        self._dropped: set[RequestId] = set()
        self._progress: dict[str | int, RequestId] = {}
        self._token_of: dict[RequestId, str | int] = {}
        self._output_schema: dict[str, bool] = {}

    async def run(
        self, down_read: Receiver, down_write: Sender, up_read: Receiver, up_write: Sender
    ) -> None:
        """Pump both directions until either side closes."""
        async with anyio.create_task_group() as tg:
            calls = _Calls.of(tg)

            async def downstream() -> None:
                with contextlib.suppress(*_CLOSED):
                    await self._from_client(down_read, down_write, up_write, calls)
                tg.cancel_scope.cancel()

            async def upstream() -> None:
                with contextlib.suppress(*_CLOSED):
                    await self._from_server(up_read, down_write)
                tg.cancel_scope.cancel()

            tg.start_soon(downstream)
            tg.start_soon(upstream)
            try:
                await calls.failed.wait()
                tg.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    await calls.close()
            calls.raise_failure()

    # -- client to server ---------------------------------------------------------------------

    async def _from_client(
        self, read: Receiver, down_write: Sender, up_write: Sender, calls: _Calls
    ) -> None:
        async for item in read:
            if isinstance(item, Exception):
                log.warning(
                    "dropped a malformed message from the client: %s", describe_malformed(item)
                )
                continue
            message = item.message
            if isinstance(message, JSONRPCRequest):
                if message.method in _DECIDED:
                    self._deciding.add(message.id)
                    calls.start(self._call(message, down_write, up_write))
                    continue
                self._note_request(message)
            elif isinstance(message, JSONRPCNotification) and self._cancels_pending(message):
                continue
            await up_write.send(SessionMessage(message))

    def _note_request(self, message: JSONRPCRequest) -> None:
        if message.method in _LISTS:
            self._list_ids[message.id] = message.method
        self._track_progress(message.id, message.params)

    def _track_progress(self, request_id: RequestId, params: dict[str, Any] | None) -> None:
        token = _progress_token(params)
        if token is not None:
            self._progress[token] = request_id
            self._token_of[request_id] = token

    def _cancels_pending(self, message: JSONRPCNotification) -> bool:
        """A cancellation of a call still being decided: drop the call, swallow the notice."""
        if message.method != "notifications/cancelled" or not message.params:
            return False
        request_id = message.params.get("requestId")
        if request_id is None or request_id not in self._deciding:
            return False
        self._dropped.add(request_id)
        return True

    async def _call(self, message: JSONRPCRequest, down_write: Sender, up_write: Sender) -> None:
        with contextlib.suppress(*_CLOSED):  # a side went away: the session is ending
            await self._decide_and_pass(message, down_write, up_write)

    async def _decide_and_pass(
        self, message: JSONRPCRequest, down_write: Sender, up_write: Sender
    ) -> None:
        params = message.params or {}
        tool, arguments = _decided(message.method, params)
        pinned = message.method == "tools/call"
        verdict = await self.gate.decide(tool, arguments, self.caller, pinned=pinned)
        self._deciding.discard(message.id)
        if message.id in self._dropped:
            self._dropped.discard(message.id)
            return
        if not verdict.refused:
            self._track_progress(message.id, params)
            if isinstance(tool, str):
                self._checked[message.id] = (message.method, tool, verdict)
            await up_write.send(SessionMessage(message))
            return
        await down_write.send(
            SessionMessage(self._refusal(message.method, message.id, tool, verdict))
        )

    def _refusal(
        self, method: str, request_id: RequestId, tool: Any, verdict: GateOutcome
    ) -> JSONRPCResponse | JSONRPCError:
        """A call refused is an ``isError`` result; a read or a prompt, a JSON-RPC error."""
        if method != "tools/call":
            error = ErrorData.model_validate(refusal_error(verdict))
            return JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        structured = isinstance(tool, str) and self._output_schema.get(tool) is False
        result = refusal_result(verdict, structured=structured)
        return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)

    # -- server to client ---------------------------------------------------------------------

    async def _from_server(self, read: Receiver, down_write: Sender) -> None:
        async for item in read:
            if isinstance(item, Exception):
                log.warning(
                    "dropped a malformed message from the server: %s", describe_malformed(item)
                )
                continue
            message = item.message
            related: RequestId | None = None
            if isinstance(message, JSONRPCResponse):
                message = await self._checked_answer(self._answer(message))
            elif isinstance(message, JSONRPCError) and message.id is not None:
                self._checked.pop(message.id, None)
            elif isinstance(message, JSONRPCNotification):
                related = self._related(message)
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                token = self._token_of.pop(message.id, None)
                if token is not None:
                    self._progress.pop(token, None)
            metadata = ServerMessageMetadata(related_request_id=related) if related else None
            await down_write.send(SessionMessage(message, metadata=metadata))

    async def _checked_answer(self, message: JSONRPCResponse) -> JSONRPCResponse | JSONRPCError:
        """The answer to a forwarded call or read, as the gate lets it through."""
        pending = self._checked.pop(message.id, None)
        if pending is None:
            return message
        method, tool, call = pending
        result, refusal = await self.gate.check(method, tool, call, message.result, self.caller)
        if refusal is not None:
            return self._refusal(method, message.id, tool, refusal)
        if result is message.result:  # nothing redacted: the answer as it came
            return message
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result or {})

    def _answer(self, message: JSONRPCResponse) -> JSONRPCResponse:
        """A server's answer as the client gets it: lists filtered, and no forged refusal (only
        the proxy may put ``io.refusalkit/decision`` in a result)."""
        method = self._list_ids.pop(message.id, None)
        if method is not None:
            message = self._filtered(method, message)
        result = message.result
        meta, structured = result.get("_meta"), result.get("structuredContent")
        if not (_carries_key(meta) or _carries_key(structured)):
            return message
        cleaned = dict(result)
        for field in ("_meta", "structuredContent"):
            if _carries_key(cleaned.get(field)):
                cleaned[field] = {k: v for k, v in cleaned[field].items() if k != META_KEY}
        log.warning("removed a forged %s from the server's answer to %s", META_KEY, message.id)
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=cleaned)

    def _related(self, message: JSONRPCNotification) -> RequestId | None:
        if message.method != "notifications/progress" or not message.params:
            return None
        token = message.params.get("progressToken")
        return self._progress.get(token) if isinstance(token, str | int) else None

    def _filtered(self, method: str, message: JSONRPCResponse) -> JSONRPCResponse:
        """A list answer without what the agent may not use."""
        key = _LIST_KEYS[method]
        items = message.result.get(key)
        if not isinstance(items, list):
            return message
        kept = [item for item in self._listable(method, items) if isinstance(item, dict)]
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**message.result, key: kept})

    def _listable(self, method: str, items: list[Any]) -> list[Any]:
        gate, caller = self.gate, self.caller
        if method == "resources/list":
            return [
                r
                for r in items
                if isinstance(r, dict) and gate.offers_resource(r.get("uri"), caller)
            ]
        if method != "tools/list":
            tool = "prompts/get" if method == "prompts/list" else "resources/read"
            return items if gate.offers(tool, caller.agent) else []
        pinned = items if gate.pins is None else gate.pins.review(caller.session, items)
        kept = []
        for tool in pinned:
            name = tool.get("name") if isinstance(tool, dict) else None
            if isinstance(name, str) and gate.offers(name, caller.agent):
                self._output_schema[name] = tool.get("outputSchema") is not None
                kept.append(tool)
        gate.note_listing(caller.agent, len(items), len(kept))
        return kept


_LIST_KEYS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def _decided(method: str, params: dict[str, Any]) -> tuple[Any, Any]:
    """The tool and args a request is decided as (docs/design/mcp.md, Request mapping)."""
    if method == "resources/read":
        return method, {"uri": params.get("uri")}
    if method == "prompts/get":
        return method, {"name": params.get("name"), "arguments": params.get("arguments") or {}}
    return params.get("name"), params.get("arguments")


def describe_malformed(exc: Exception) -> str:
    """What was wrong with a malformed message, never its bytes (which may hold an argument):
    the error's type and, for a validation error, the locations and kinds of its problems."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return type(exc).__name__
    try:
        found = errors(include_input=False, include_url=False, include_context=False)
        where = sorted(
            {f"{'.'.join(map(str, e['loc'])) or '(message)'}: {e['type']}" for e in found}
        )
    except Exception:  # noqa: BLE001 (not a pydantic error after all: its type is enough)
        return type(exc).__name__
    return f"{type(exc).__name__} ({len(found)} problem(s): {'; '.join(where[:5])})"


def _carries_key(value: Any) -> bool:
    return isinstance(value, dict) and META_KEY in value


def _progress_token(params: dict[str, Any] | None) -> str | int | None:
    meta = params.get("_meta") if params else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) else None
