"""The application factory: ``create_app(config) -> FastAPI``.

The pack is loaded when the app is made (a bad pack fails start-up with its errors); the journal
opens in the lifespan, inside the worker process that serves. SIGHUP reloads the pack.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Receive, Scope, Send

from refusalkit._internal.serving import tune_gc
from refusalkit._version import __version__
from refusalkit.keyring import Keyring
from refusalkit.server import (
    _routes_approvals,
    _routes_decide,
    _routes_journal,
    _routes_ops,
    _routes_tlog,
    _ui,
)
from refusalkit.server._config import CONFIG_ENV, ServiceConfig
from refusalkit.server._errors import install_error_handlers
from refusalkit.server._fastpath import DecideFastPath
from refusalkit.server._limits import BodyLimit
from refusalkit.server._logging import configure_logging
from refusalkit.server._models import BatchRequestModel, DecideRequestModel
from refusalkit.server._service import Service

__all__ = ["ServiceApp", "app_from_environment", "create_app"]

log = logging.getLogger("refusalkit.server")


class ServiceApp(FastAPI):
    """The FastAPI app behind two pure ASGI layers: the decide fast path, then the body bound
    (which the fast path applies to the decide bodies itself).

    Both run before Starlette's own middleware stack, so a decision costs no routing, dependency
    injection or per-request middleware beyond them (the decision point is hot).
    """

    def front(self, service: Service, max_body_bytes: int) -> None:
        """Install the layers in front of the app."""
        limit = BodyLimit(super().__call__, max_body_bytes)
        self._front: ASGIApp = DecideFastPath(limit, service)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Enter through the front layers."""
        await self._front(scope, receive, send)


def create_app(config: ServiceConfig, *, keyring: Keyring | None = None) -> FastAPI:
    """A FastAPI app serving ``config``; ``keyring`` overrides the one the config names."""
    service = Service(config, keyring)
    app = ServiceApp(
        title="refusalkit service",
        version=__version__,
        description="Decide tool calls, journal every decision, read the journal and its proofs.",
        lifespan=_lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.service = service
    install_error_handlers(app)
    for module in (
        _routes_decide,
        _routes_journal,
        _routes_tlog,
        _routes_approvals,
        _routes_ops,
        _ui,
    ):
        app.include_router(module.router)
    app.front(service, config.max_body_bytes)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def app_from_environment() -> FastAPI:
    """The factory uvicorn workers call: the config comes from ``$REFUSALKIT_SERVICE_CONFIG``."""
    configure_logging()
    app = create_app(ServiceConfig.from_json(os.environ[CONFIG_ENV]))
    tune_gc()  # a uvicorn worker process serves only this app
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    service: Service = app.state.service
    await service.journal.open()
    size = await service.journal.read(lambda j: j.size())
    service.journal.size_seen = size
    service.metrics.journal_size.set(size)
    _install_sighup(service)
    service.checkpoints.start()
    log.info("serving pack %s, journal %s (%d entries)", service.pack.digest, "open", size)
    try:
        yield
    finally:
        _remove_sighup()
        await service.checkpoints.stop()
        await _stop_verification(service)
        await service.journal.close()


async def _stop_verification(service: Service) -> None:
    """Stop a dashboard verification in flight, so its child process is reaped while the loop
    still runs (a child left behind is killed, and its pipes closed, here)."""
    task = service.verify_task
    if task is not None and not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _install_sighup(service: Service) -> None:
    loop = asyncio.get_running_loop()

    def on_hup() -> None:
        log.info("SIGHUP: reloading the pack")
        task = loop.create_task(_reload_quietly(service))
        service.background.add(task)
        task.add_done_callback(service.background.discard)

    try:
        loop.add_signal_handler(signal.SIGHUP, on_hup)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals
        log.debug("SIGHUP reload not available in this thread; use POST /v1/admin/reload")


def _remove_sighup() -> None:
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
        asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)


async def _reload_quietly(service: Service) -> None:
    result = await service.pack.reload()
    service.metrics.reloads.labels("loaded" if result.loaded else "rejected").inc()


def _openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in (DecideRequestModel, BatchRequestModel):
            body = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(body.pop("$defs", {}))
            schemas[model.__name__] = body
        app.openapi_schema = doc
    return app.openapi_schema
