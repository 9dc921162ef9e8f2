"""Run the service on uvicorn: one process, or a supervisor and N workers sharing one socket.

With several workers, uvicorn's supervisor would answer SIGHUP by restarting every worker; ours
forwards SIGHUP to each worker instead, and each reloads its pack in place (a bad pack is
rejected and the old one keeps serving). Workers build the app from ``$REFUSALKIT_SERVICE_CONFIG``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import tempfile

import uvicorn
from uvicorn.supervisors import Multiprocess

from refusalkit._internal.serving import tune_gc
from refusalkit.server._app import create_app
from refusalkit.server._config import CONFIG_ENV, ServiceConfig
from refusalkit.server._logging import configure_logging
from refusalkit.server._service import SUPERVISOR_ENV

__all__ = ["serve", "uvicorn_options"]

log = logging.getLogger("refusalkit.server")


class _ForwardingSupervisor(Multiprocess):
    """uvicorn's supervisor, except that SIGHUP is passed on to the workers (pack reload)."""

    def handle_hup(self) -> None:
        """Forward SIGHUP to every worker."""
        for process in self.processes:
            if process.pid is not None:
                os.kill(process.pid, signal.SIGHUP)


def uvicorn_options(*, access_log: bool) -> dict[str, object]:
    """The fastest event loop and HTTP parser installed (uvloop, httptools), else the defaults."""
    options: dict[str, object] = {"access_log": access_log, "log_level": "info"}
    if importlib.util.find_spec("uvloop") is not None:
        options["loop"] = "uvloop"
    if importlib.util.find_spec("httptools") is not None:
        options["http"] = "httptools"
    return options


def serve(
    config: ServiceConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8750,
    workers: int = 1,
    access_log: bool = False,
) -> None:
    """Serve ``config`` until SIGINT or SIGTERM."""
    configure_logging()
    options = uvicorn_options(access_log=access_log)
    if workers <= 1:
        app = create_app(config)
        tune_gc()
        uvicorn.run(app, host=host, port=port, **options)  # type: ignore[arg-type]
        return
    create_app(config)  # fail here, with the pack's errors, rather than in every worker
    os.environ[CONFIG_ENV] = config.to_json()
    os.environ[SUPERVISOR_ENV] = str(os.getpid())
    with tempfile.TemporaryDirectory(prefix="refusalkit-metrics-") as metrics_dir:
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
        uv_config = uvicorn.Config(
            "refusalkit.server._app:app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            **options,  # type: ignore[arg-type]
        )
        socket = uv_config.bind_socket()
        _ForwardingSupervisor(uv_config, sockets=[socket]).run()
