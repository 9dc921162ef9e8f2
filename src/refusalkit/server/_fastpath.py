"""The hot path: ``POST /v1/decide`` and ``/v1/decide/batch`` answered by a small ASGI handler.

FastAPI's routing and dependency injection cost more per call than deciding does, so this handler
answers the two decide endpoints before FastAPI sees them. It does nothing of its own: it hands
the ``Authorization`` header and the body to ``decide_call`` (``_routes_decide.py``), the same
function the FastAPI routes call, which checks the key and decides. Errors are the same typed
JSON bodies. Every other request passes through to the body bound and FastAPI behind it.

It reads a decide body itself, through the body bound's own ``BodyLimit.read`` (the same 413s,
before the key is checked, as for every other route), so the body is not buffered by one layer
and replayed to the next.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from refusalkit.server._errors import ApiError, error_response
from refusalkit.server._limits import BodyLimit
from refusalkit.server._routes_decide import DECIDE_PATHS, decide_call
from refusalkit.server._service import Service

__all__ = ["DecideFastPath"]


class DecideFastPath:
    """Pure ASGI middleware in front of the body bound and FastAPI for the two decide
    endpoints."""

    def __init__(self, limit: BodyLimit, service: Service) -> None:
        self.app = limit
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the decide endpoints here; pass everything else on."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path not in DECIDE_PATHS or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            body = await self.app.read(scope, receive)
        except ApiError as exc:  # over the bound: answered as the bound answers any route
            await error_response(exc)(scope, receive, send)
            return
        except ClientDisconnect:  # cut short: a part of a request is not decided
            return

        async def read_body() -> bytes:
            return body

        try:
            authorization, request_id = _headers(scope)
            answer = await decide_call(self.service, authorization, path, read_body, request_id)
        except ApiError as exc:
            self.service.metrics.errors.labels(exc.code.value).inc()
            await error_response(exc)(scope, receive, send)
            return
        await answer.send(send)


def _headers(scope: Scope) -> tuple[str | None, str | None]:
    """The ``Authorization`` and ``Refusalkit-Request-Id`` headers (the first of each)."""
    authorization = request_id = None
    for name, value in scope["headers"]:
        if name == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
        elif name == b"refusalkit-request-id" and request_id is None:
            request_id = value.decode("latin-1")
    return authorization, request_id
