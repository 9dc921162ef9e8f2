"""The service's error handlers: every error, FastAPI's own included, answered as the typed JSON
body of ``refusalkit._internal.apierrors`` (``{"error": {"code", "message", "hint"}}``).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from refusalkit._internal.apierrors import ApiError, ErrorCode, error_response

__all__ = ["ApiError", "ErrorCode", "error_response", "install_error_handlers"]

log = logging.getLogger("refusalkit.server")


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
