"""The hot path: ``POST /v1/decide`` and ``/v1/decide/batch`` answered by a small ASGI handler.

FastAPI's routing and dependency injection cost more per call than deciding does; this handler
checks the bearer key (same ``Authenticator``), then calls the very functions the FastAPI routes
call (``answer_decide``, ``answer_batch``). The FastAPI routes stay: they publish the OpenAPI
document and serve any app mounted without this handler. Errors are the same typed JSON bodies.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from refusalkit.server._auth import bearer_key
from refusalkit.server._errors import ApiError, error_response
from refusalkit.server._keys import Scope as KeyScope
from refusalkit.server._routes_decide import answer_batch, answer_decide
from refusalkit.server._service import Service

__all__ = ["DecideFastPath"]

_HANDLERS = {"/v1/decide": answer_decide, "/v1/decide/batch": answer_batch}


class DecideFastPath:
    """Pure ASGI middleware in front of FastAPI for the two decide endpoints."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the decide endpoints here; pass everything else on."""
        handler = _HANDLERS.get(scope.get("path", "")) if scope["type"] == "http" else None
        if handler is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            self.service.auth.check(_bearer(scope), KeyScope.DECIDE)
            answer = await handler(self.service, await _body(receive))
        except ApiError as exc:
            self.service.metrics.errors.labels(exc.code.value).inc()
            await error_response(exc)(scope, receive, send)
            return
        await answer.send(send)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bearer_key(value.decode("latin-1"))
    return None


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
