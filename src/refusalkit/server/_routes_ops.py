"""Operations: liveness, readiness, Prometheus metrics, the OpenAPI document, pack reload."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST

from refusalkit._internal.keys import ApiKey, Scope
from refusalkit.server._auth import bearer_token, require
from refusalkit.server._errors import ApiError, ErrorCode
from refusalkit.server._models import ErrorModel, HealthModel, ReadyModel, ReloadModel
from refusalkit.server._service import Service

__all__ = ["reload_pack", "router"]

router = APIRouter(tags=["operations"])
_ERRORS: dict[int | str, dict[str, Any]] = {401: {"model": ErrorModel}, 403: {"model": ErrorModel}}


@router.get("/healthz", response_model=HealthModel)
async def healthz() -> HealthModel:
    """The process is up (the only endpoint open without a key)."""
    return HealthModel(status="ok")


@router.get(
    "/readyz",
    response_model=ReadyModel,
    responses={**_ERRORS, 503: {"model": ReadyModel, "description": "Not ready."}},
)
async def readyz(
    request: Request, _: Annotated[ApiKey, Depends(require(Scope.READ))]
) -> JSONResponse:
    """Ready when a pack is loaded and the journal store answers; 503 and the problems otherwise."""
    service: Service = request.app.state.service
    problems: list[str] = []
    size: int | None = None
    pack = service.pack.point.pack
    if service.pack.source_missing():
        problems.append(f"the pack file {service.pack.path} is gone (a reload would fail)")
    try:
        size = await asyncio.wait_for(service.journal.read(lambda j: j.size()), timeout=3.0)
        service.metrics.journal_size.set(size)
    except Exception as exc:  # noqa: BLE001 (any failure means not ready)
        problems.append(f"the journal store does not answer ({type(exc).__name__})")
    body = ReadyModel(
        ready=not problems,
        pack={"id": pack.id, "version": pack.version, "digest": pack.digest},
        journal_size=size,
        problems=problems,
    )
    return JSONResponse(body.model_dump(), status_code=200 if not problems else 503)


@router.get(
    "/metrics",
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text."}, **_ERRORS},
    response_class=Response,
)
async def metrics(request: Request, _: Annotated[ApiKey, Depends(require(Scope.READ))]) -> Response:
    """Prometheus metrics: decisions by action and reason code, latency, journal size, errors."""
    service: Service = request.app.state.service
    if service.journal.size_seen:
        service.metrics.journal_size.set(service.journal.size_seen)
    return Response(service.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


async def reload_pack(service: Service, *, spread: bool) -> ReloadModel:
    """Reload the pack; raises a 422 ``ApiError`` with the pack's errors when it is rejected."""
    result = await service.pack.reload()
    service.metrics.reloads.labels("loaded" if result.loaded else "rejected").inc()
    if not result.loaded:
        raise ApiError(
            422,
            ErrorCode.PACK_REJECTED,
            f"the pack was rejected, still serving {result.digest}: {result.error}",
            result.hint or "Fix the pack, then reload again.",
        )
    if spread:
        service.spread_reload()
    return ReloadModel(loaded=True, digest=result.digest, previous_digest=result.previous_digest)


@router.post(
    "/v1/admin/reload",
    response_model=ReloadModel,
    responses={**_ERRORS, 422: {"model": ErrorModel, "description": "The pack was rejected."}},
    tags=["admin"],
)
async def admin_reload(
    request: Request, _: Annotated[ApiKey, Depends(require(Scope.ADMIN))]
) -> ReloadModel:
    """Load the pack file again; a bad pack is rejected with its errors and the old one serves."""
    return await reload_pack(request.app.state.service, spread=True)


@router.get("/openapi.json", include_in_schema=False)
async def openapi(request: Request) -> JSONResponse:
    """The OpenAPI document (any valid key)."""
    service: Service = request.app.state.service
    service.auth.identify(bearer_token(request.headers.get("authorization")))
    return JSONResponse(request.app.openapi())
