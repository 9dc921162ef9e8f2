"""A bound on request bodies, enforced before any route runs (answers 413).

A declared ``Content-Length`` over the bound is refused without reading the body; a chunked body
is counted as it arrives and refused as soon as it passes the bound. A body the client abandons
(``http.disconnect`` before the last chunk) is never handed on: no route decides, journals or
answers a request that was not sent whole.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from refusalkit.server._errors import ApiError, ErrorCode, error_response

__all__ = ["BodyLimit"]


class BodyLimit:
    """Pure ASGI middleware: buffer at most ``max_bytes`` of body, else answer 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then buffer the body and replay it to the app."""
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        try:
            body = await self.read(scope, receive)
        except ApiError as exc:
            await error_response(exc)(scope, receive, send)
            return
        except ClientDisconnect:  # the client is gone: nothing to run, no one to answer
            return
        await self.app(scope, _replay(body, receive), send)

    async def read(self, scope: Scope, receive: Receive) -> bytes:
        """The whole body within the bound: a declared ``Content-Length`` over it is refused
        unread, a body that passes it as it arrives as soon as it does (413 ``ApiError``).
        ``ClientDisconnect`` when the client goes before its last chunk: what came is a part."""
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            raise self._refusal(declared)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect: the body was cut short
                raise ClientDisconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise self._refusal(None)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _refusal(self, size: int | None) -> ApiError:
        what = f"{size} bytes" if size is not None else "the body"
        return ApiError(
            413,
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"{what} is over this service's limit of {self.max_bytes} bytes",
            "Send a smaller body, or split a batch into several requests.",
        )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(body: bytes, downstream: Receive) -> Receive:
    """A receive that gives the buffered body once, then waits on the real one (disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            message: dict[str, Any] = {"type": "http.request", "body": body, "more_body": False}
            return message
        return await downstream()

    return receive
