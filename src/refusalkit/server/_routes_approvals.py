"""``/v1/approvals``: pending requests for approval, and the grant or denial of one
(docs/design/service.md, docs/design/approvals.md).

Every route needs the ``approve`` scope, which an agent's ``decide`` key does not have, and the
approver an answer names is the API key's own name, never a value the caller sends: an agent
cannot approve itself, nor answer in someone else's name. The answers are written on the
journal's writer connection, signed with the service's keyring.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Request

from refusalkit._internal.keys import ApiKey, Scope
from refusalkit.approvals import AnswerKind, ApprovalBook
from refusalkit.errors import ApprovalError
from refusalkit.journal import Journal
from refusalkit.model import parse_duration
from refusalkit.server._auth import require
from refusalkit.server._errors import ApiError, ErrorCode
from refusalkit.server._models import (
    ApprovalAnswerModel,
    ApprovalsModel,
    DenyBodyModel,
    ErrorModel,
    GrantBodyModel,
)
from refusalkit.server._service import Service

__all__ = ["answer_request", "pending", "router"]

router = APIRouter(prefix="/v1", tags=["approvals"])
Approver = Annotated[ApiKey, Depends(require(Scope.APPROVE))]
RequestId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z-]+$")]
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorModel},
    403: {"model": ErrorModel, "description": "The key lacks the `approve` scope."},
    404: {"model": ErrorModel, "description": "No request for approval has this id."},
    409: {"model": ErrorModel, "description": "The request may not be answered (see message)."},
    422: {"model": ErrorModel},
    503: {"model": ErrorModel},
}


def _unavailable(exc: Exception) -> ApiError:
    return ApiError(
        503,
        ErrorCode.JOURNAL_UNAVAILABLE,
        f"the journal cannot be used ({type(exc).__name__})",
        "Retry later; check the store.",
    )


async def pending(service: Service) -> list[dict[str, Any]]:
    """The pending requests as ``GET /v1/approvals`` lists them (the dashboard shows them too)."""
    ring = service.keyring

    def run(journal: Journal) -> list[dict[str, Any]]:
        return [p.to_dict() for p in ApprovalBook(journal, ring).pending()]

    try:
        rows: list[dict[str, Any]] = await service.journal.read(run)
    except Exception as exc:
        raise _unavailable(exc) from exc
    return rows


async def answer_request(
    service: Service,
    kind: AnswerKind,
    request_id: str,
    approver: str,
    *,
    ttl: str | None = None,
    reason: str | None = None,
) -> ApprovalAnswerModel:
    """Record a grant or a denial of ``request_id`` by ``approver`` (404, 409, 422, 503)."""
    seconds = None
    if ttl is not None:
        seconds = parse_duration(ttl)
        if seconds is None:
            raise ApiError(422, ErrorCode.INVALID_REQUEST, f"ttl {ttl!r} is not a duration",
                           "Write 90s, 15m, 2h or 7d.")  # fmt: skip
    ring = service.keyring

    def run(journal: Journal) -> tuple[int, Any]:
        book = ApprovalBook(journal, ring)
        return book.answer(kind, request_id, approver, ttl_s=seconds, reason=reason)

    try:
        index, answer = await service.journal.write(run)
    except ApprovalError as exc:
        status = 404 if exc.message.startswith("no request for approval") else 409
        code = ErrorCode.NOT_FOUND if status == 404 else ErrorCode.APPROVAL_REFUSED
        raise ApiError(status, code, exc.message, exc.hint) from exc
    except Exception as exc:
        raise _unavailable(exc) from exc
    return ApprovalAnswerModel(
        request_id=request_id,
        answer=answer.kind.value,
        journal_index=index,
        request_index=answer.request_index,
        approver=answer.approver,
        expires_at=answer.expires_at,
        record=answer.to_dict(),
    )


@router.get("/approvals", response_model=ApprovalsModel, responses=_ERRORS)
async def list_approvals(request: Request, _: Approver) -> ApprovalsModel:
    """The pending requests for approval, oldest first: tool, agent, rule, message, arguments
    redacted as in why-trails."""
    return ApprovalsModel.model_validate({"pending": await pending(request.app.state.service)})


@router.post("/approvals/{request_id}/grant", response_model=ApprovalAnswerModel, responses=_ERRORS)
async def grant(
    request: Request,
    request_id: RequestId,
    key: Approver,
    body: Annotated[GrantBodyModel | None, Body()] = None,
) -> ApprovalAnswerModel:
    """Grant a request: the same action may run once, until the grant expires. The approver is
    this key's name; it may not be the agent that asked."""
    ttl = body.ttl if body is not None else None
    return await answer_request(
        request.app.state.service, AnswerKind.GRANT, request_id, key.name, ttl=ttl
    )


@router.post("/approvals/{request_id}/deny", response_model=ApprovalAnswerModel, responses=_ERRORS)
async def deny(
    request: Request,
    request_id: RequestId,
    key: Approver,
    body: Annotated[DenyBodyModel | None, Body()] = None,
) -> ApprovalAnswerModel:
    """Deny a request: retries of the same action stay refused, naming the denial."""
    reason = body.reason if body is not None else None
    return await answer_request(
        request.app.state.service, AnswerKind.DENIAL, request_id, key.name, reason=reason
    )
