"""``refusalkit mcp proxy``: a Streamable HTTP reverse proxy in front of a remote MCP server.

Each MCP session a client opens here (an ``initialize`` POST without ``Mcp-Session-Id``) gets the
SDK's server-side Streamable HTTP transport with a fresh session id and its own upstream session
(the SDK's Streamable HTTP client), joined by a ``Bridge``. The session id the client sees is the
``caller.session`` of every decision in it. Refusals travel as ordinary JSON-RPC results, so they
are HTTP 200 like any answer; 4xx is only for the transport's own errors (no key, unknown
session, a bad body).

Clients authenticate as they do to the service: ``Authorization: Bearer <API key>`` from the
keys file (``refusalkit service keys add NAME --scopes decide``). The key's name is the session's
``caller.agent`` unless ``--agent`` fixes one; a session answers only the key that opened it. The
key is never sent upstream: the proxy's own bearer token for the upstream, if it needs one, comes
from an environment variable (``--upstream-token-env``). An attestation token (compact JWS) for
the pack's ``@attestation`` stage rides in the ``Refusalkit-Attestation`` header of the
``initialize`` request.

DNS rebinding is refused as MCP's transport requires: the ``Host`` header must name a loopback
address or an ``--allowed-host`` (421 otherwise), and a browser's ``Origin`` must be one of them
(403 otherwise). Bodies over 4 MiB are refused (413).

Only the initialize handshake (protocol revisions up to 2025-11-25) is proxied: a request of the
stateless 2026-07-28 revision is answered 400, on which SDK clients fall back to the handshake.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import anyio
import httpx2
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecuritySettings,
)
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from refusalkit._internal.apierrors import ApiError, ErrorCode, error_response
from refusalkit._internal.auth import Authenticator
from refusalkit._internal.keys import KeyStore
from refusalkit._internal.keys import Scope as KeyScope
from refusalkit.mcp_proxy._bridge import Bridge
from refusalkit.mcp_proxy._gate import Caller, Gate

__all__ = ["ProxyApp", "serve_http"]

log = logging.getLogger("refusalkit.mcp")

_SESSION_HEADER = b"mcp-session-id"
_ATTESTATION_HEADER = b"refusalkit-attestation"
_IDLE_TIMEOUT_S = 1800.0
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_AUTH_CODE = -32011  # JSON-RPC 2.0 §5.1 server-error range: the key was refused


@dataclass(frozen=True, slots=True)
class _Session:
    transport: StreamableHTTPServerTransport
    owner: str | None


class ProxyApp:
    """The ASGI app of ``mcp proxy``: authenticate, route to the session, bridge upstream."""

    def __init__(
        self,
        gate: Gate,
        upstream: str,
        *,
        keys: KeyStore | None,
        agent: str | None = None,
        path: str = "/mcp",
        allowed_hosts: Sequence[str] = (),
        max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
        upstream_token: str | None = None,
    ) -> None:
        self.gate = gate
        self.upstream = upstream
        self._upstream_headers = (
            {"Authorization": f"Bearer {upstream_token}"} if upstream_token else {}
        )
        self.auth = Authenticator(keys)
        self.agent = agent
        self.path = path
        self._sessions: dict[str, _Session] = {}
        self._tg: TaskGroup | None = None
        hosts = [*_LOOPBACK, *allowed_hosts]
        self._security = TransportSecuritySettings(
            allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
            allowed_origins=[f"{scheme}://{h}{port}" for scheme in ("http", "https")
                             for h in hosts for port in ("", ":*")],
        )  # fmt: skip
        self._limited = RequestBodyLimitMiddleware(self._http, max_body_bytes)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The task group that holds every session's bridge (the app's lifespan)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._tg = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http":
            await self._limited(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            self._check_path(scope)
            try:
                owner = self._authenticate(scope)
            except ApiError as error:
                await _auth_refusal(error)(scope, receive, send)
                return
            await self._route(scope, receive, send, owner)
        except ApiError as error:
            await error_response(error)(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            while message["type"] != "lifespan.shutdown":
                message = await receive()
        await send({"type": "lifespan.shutdown.complete"})

    # -- authentication -----------------------------------------------------------------------

    def _check_path(self, scope: Scope) -> None:
        if scope["path"].rstrip("/") != self.path:
            raise ApiError(
                404, ErrorCode.NOT_FOUND, f"no MCP endpoint at {scope['path']}",
                f"The MCP endpoint is {self.path}.",
            )  # fmt: skip

    def _authenticate(self, scope: Scope) -> str | None:
        """The name of the caller's API key, checked as the service checks it (None without a
        keys file); raises the service's ``ApiError`` (401, 403, 503)."""
        if self.auth.store is None:
            return None
        return self.auth.check(_bearer(scope), KeyScope.DECIDE).name

    # -- sessions -----------------------------------------------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send, owner: str | None) -> None:
        session_id = _header(scope, _SESSION_HEADER)
        if session_id is None:
            if scope["method"] != "POST":
                raise ApiError(
                    400, ErrorCode.INVALID_REQUEST, "no Mcp-Session-Id header",
                    "Open a session with an initialize POST first.",
                )  # fmt: skip
            await self._open(scope, receive, send, owner)
            return
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:  # another key's session looks unknown
            raise ApiError(
                404, ErrorCode.NOT_FOUND, "session not found", "Initialize a new session."
            )
        await session.transport.handle_request(scope, receive, send)
        if session.transport.is_terminated:
            self._sessions.pop(session_id, None)

    async def _open(self, scope: Scope, receive: Receive, send: Send, owner: str | None) -> None:
        """Start a session for an opening request; keep it only if the transport accepted it."""
        if self._tg is None:
            raise ApiError(
                503, ErrorCode.NOT_READY, "the proxy is starting or stopping", "Retry shortly."
            )
        session_id = uuid4().hex
        transport = StreamableHTTPServerTransport(
            session_id, idle_timeout=_IDLE_TIMEOUT_S, security_settings=self._security
        )
        caller = Caller(
            agent=self.agent if self.agent is not None else owner,
            session=session_id,
            token=_header(scope, _ATTESTATION_HEADER),
        )
        self._sessions[session_id] = _Session(transport, owner)
        await self._tg.start(self._serve, transport, caller)
        status = await _status_of(transport.handle_request, scope, receive, send)
        if status is None or status >= 400:
            await self._close(session_id, transport)

    async def _serve(
        self,
        transport: StreamableHTTPServerTransport,
        caller: Caller,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """One session's life: downstream transport, upstream client, the bridge between."""
        try:
            async with transport.connect() as (down_read, down_write):
                task_status.started()
                idle = transport.idle_scope or anyio.CancelScope()
                with idle:
                    async with self._upstream_client() as (up_read, up_write):
                        await Bridge(self.gate, caller).run(
                            down_read, down_write, up_read, up_write
                        )
        except Exception:
            log.exception("MCP session %s ended with an error", caller.session)
        finally:
            self.gate.end_session(caller.session)
            await self._close(caller.session, transport)

    @contextlib.asynccontextmanager
    async def _upstream_client(self) -> AsyncIterator[tuple[Any, Any]]:
        """One session's connection upstream, with the proxy's own credential (if any)."""
        timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE streams stay open
        async with (
            httpx2.AsyncClient(headers=self._upstream_headers, timeout=timeout) as http,
            streamable_http_client(self.upstream, http_client=http) as streams,
        ):
            yield streams

    async def _close(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._sessions.pop(session_id, None)
        if not transport.is_terminated:
            with anyio.CancelScope(shield=True):
                await transport.terminate()


def _auth_refusal(error: ApiError) -> JSONResponse:
    """A missing, unknown or under-scoped key: 403 with a JSON-RPC error body, and no
    ``WWW-Authenticate`` challenge (docs/mcp.md, Authentication).

    MCP's authorization spec (2025-11-25, Authorization Flow) has clients start OAuth discovery
    on a 401; the SDK's client runs it on every 401, and on a 403 only for ``insufficient_scope``.
    A plain 403 whose body is a JSON-RPC error is surfaced by clients as that error, so the user
    reads refusalkit's message and hint instead of being sent to an OAuth login page. A 503
    (the keys file cannot be read) is answered as it is.
    """
    if error.status not in (401, 403):
        return error_response(error)
    message = f"refusalkit: {error.message}. {error.hint}"
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": _AUTH_CODE,
            "message": message,
            "data": {"error": {"code": error.code.value, "message": error.message,
                               "hint": error.hint}},
        },
    }  # fmt: skip
    return JSONResponse(body, status_code=403)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _bearer(scope: Scope) -> str | None:
    value = _header(scope, b"authorization")
    if value is None:
        return None
    kind, _, credentials = value.partition(" ")
    return credentials.strip() if kind.lower() == "bearer" else None


async def _status_of(app: Any, scope: Scope, receive: Receive, send: Send) -> int | None:
    """Run an ASGI app and report the status it answered with."""
    status: int | None = None

    async def watch(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        await send(message)

    await app(scope, receive, watch)
    return status


async def serve_http(
    app: ProxyApp, *, host: str, port: int, ready: Callable[[str], None] | None = None
) -> None:
    """Serve ``app`` with uvicorn until interrupted; ``ready`` gets the endpoint's URL."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.02)
        if ready is not None:
            [sock] = [s for srv in server.servers for s in srv.sockets][:1]
            bound_host, bound_port = sock.getsockname()[:2]
            ready(f"http://{bound_host}:{bound_port}{app.path}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve()
        tg.cancel_scope.cancel()
