"""Which event loop runs the proxy: asyncio, whose own tasks, timeouts and pipe transports the
hot path uses, or another that anyio runs (trio), which gets anyio's portable forms."""

from __future__ import annotations

import asyncio

__all__ = ["asyncio_loop"]


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or ``None`` on another event loop (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
