"""Typed JSON errors of the HTTP API: ``{"error": {"code", "message", "hint"}}``.

Every non-2xx answer has this body, so a client can branch on ``code`` (a stable identifier) and
show ``message`` and ``hint`` (what to do) to a person.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["ApiError", "ErrorCode", "error_response", "install_error_handlers"]

log = logging.getLogger("refusalkit.server")


class ErrorCode(enum.StrEnum):
    """Stable error identifiers of the API (the ``code`` field)."""

    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    PAYLOAD_TOO_LARGE = "payload-too-large"
    BATCH_TOO_LARGE = "batch-too-large"
    INVALID_REQUEST = "invalid-request"
    NOT_FOUND = "not-found"
    APPROVAL_REFUSED = "approval-refused"
    METHOD_NOT_ALLOWED = "method-not-allowed"
    PROOF_UNAVAILABLE = "proof-unavailable"
    PACK_REJECTED = "pack-rejected"
    JOURNAL_UNAVAILABLE = "journal-unavailable"
    NOT_READY = "not-ready"
    INTERNAL = "internal"


class ApiError(Exception):
    """An error answered as a typed JSON body with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: ErrorCode,
        message: str,
        hint: str,
        *,
        headers: dict[str, str] | None = None,
        details: Any = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.hint = status, code, message, hint
        self.headers = headers
        self.details = details


def error_response(error: ApiError) -> JSONResponse:
    """The JSON response of an ``ApiError``."""
    body: dict[str, Any] = {"code": error.code.value, "message": error.message, "hint": error.hint}
    if error.details is not None:
        body["details"] = error.details
    return JSONResponse({"error": body}, status_code=error.status, headers=error.headers)


_STATUS_CODES = {
    401: (ErrorCode.UNAUTHENTICATED, "Send `Authorization: Bearer <key>`."),
    403: (ErrorCode.FORBIDDEN, "Use a key with the scope this endpoint needs."),
    404: (ErrorCode.NOT_FOUND, "See /docs or /openapi.json for the endpoints."),
    405: (ErrorCode.METHOD_NOT_ALLOWED, "See /openapi.json for the methods of this path."),
    413: (ErrorCode.PAYLOAD_TOO_LARGE, "Send a smaller body."),
}


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    service = getattr(request.app.state, "service", None)
    if service is not None:
        service.metrics.errors.labels(exc.code.value).inc()
    return error_response(exc)


async def _on_http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code, hint = _STATUS_CODES.get(
        exc.status_code, (ErrorCode.INVALID_REQUEST, "Check the request.")
    )
    headers = dict(exc.headers) if exc.headers else None
    error = ApiError(exc.status_code, code, str(exc.detail), hint, headers=headers)
    return error_response(error)


async def _on_validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    details = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in exc.errors()
    ]
    where = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:3])
    error = ApiError(
        422,
        ErrorCode.INVALID_REQUEST,
        f"the request does not validate: {where}",
        "See /openapi.json for the parameters and body of this endpoint.",
        details=details,
    )
    return error_response(error)


async def _on_unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.error("unexpected error: %s", type(exc).__name__, exc_info=exc)
    error = ApiError(
        500,
        ErrorCode.INTERNAL,
        f"internal error ({type(exc).__name__})",
        "Retry later; if it persists, see the service log.",
    )
    return error_response(error)


def install_error_handlers(app: FastAPI) -> None:
    """Route every error to a typed JSON body."""
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(Exception, _on_unexpected)
