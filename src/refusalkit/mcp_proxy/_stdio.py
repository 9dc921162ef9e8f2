"""``refusalkit mcp wrap``: a stdio MCP proxy in place of the server command (docs/mcp.md).

The MCP client starts the wrapper; the wrapper starts the real server as its child (with the
wrapper's whole environment, so ``env`` set in the client's config reaches the server) and
bridges the two with the SDK's stdio transports. The session is the wrapper's process: its id is
a fresh UUIDv7, the ``caller.session`` of every request and the ``subject.session`` of every
decision, so ``journal query --session`` finds one conversation's decisions.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TextIO

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server

from refusalkit.decide import DecisionPoint
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.mcp_proxy._bridge import Bridge
from refusalkit.mcp_proxy._gate import Caller, Gate
from refusalkit.server import JournalAccess

__all__ = ["open_gate", "serve_stdio"]

_MAX_GROUP = 1000


@asynccontextmanager
async def open_gate(
    point: DecisionPoint,
    journal: str,
    keyring: Keyring,
    *,
    server_name: str,
    shadow: bool = False,
    timeout_s: float = 5.0,
    report: TextIO | None = None,
) -> AsyncIterator[Gate]:
    """A gate over an open journal (group-committed appends on their own thread)."""
    access = JournalAccess(journal, keyring, origin=None, max_group=_MAX_GROUP)
    await access.open()
    try:
        yield Gate(
            point, access, keyring, server_name=server_name, shadow=shadow,
            timeout_s=timeout_s, report=report,
        )  # fmt: skip
    finally:
        await access.close()


async def serve_stdio(gate: Gate, caller: Caller, command: Sequence[str]) -> None:
    """Serve MCP on this process's stdin/stdout, bridged to ``command``'s stdio, until EOF."""
    if not command:
        raise UsageError(
            "no server command to wrap",
            hint="Put the server's command after --, e.g. `refusalkit mcp wrap ... -- npx srv`.",
        )
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ))
    async with stdio_server() as (down_read, down_write), stdio_client(params) as up:
        await Bridge(gate, caller).run(down_read, down_write, up[0], up[1])
