"""Typed JSON errors of the HTTP API: ``{"error": {"code", "message", "hint"}}`` (docs/service.md).

Every non-2xx answer of the service and of the MCP proxy has this body, so a client can branch on
``code`` (a stable identifier) and show ``message`` and ``hint`` (what to do) to a person. Built
on Starlette's ``JSONResponse`` (FastAPI's is the same class), so the MCP proxy needs no FastAPI.
"""

from __future__ import annotations

import enum
from typing import Any

from starlette.responses import JSONResponse

from refusalkit.errors import RefusalkitError

__all__ = ["ApiError", "ErrorCode", "error_response"]


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


class ApiError(RefusalkitError):
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
        super().__init__(message, hint=hint)
        self.status, self.code = status, code
        self.headers = headers
        self.details = details


def error_response(error: ApiError) -> JSONResponse:
    """The JSON response of an ``ApiError``."""
    body: dict[str, Any] = {"code": error.code.value, "message": error.message, "hint": error.hint}
    if error.details is not None:
        body["details"] = error.details
    return JSONResponse({"error": body}, status_code=error.status, headers=error.headers)
