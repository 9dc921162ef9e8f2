"""``refusalkit mcp wrap``: a stdio MCP proxy in place of the server command (docs/mcp.md).

The MCP client starts the wrapper; the wrapper starts the real server as its child (with the
wrapper's whole environment, so ``env`` set in the client's config reaches the server) and
bridges the two with MCP's stdio transport on the event loop (``_pipes.py``). The session is
the wrapper's process: its id is a fresh UUIDv7, the ``caller.session`` of every request and
the ``subject.session`` of every decision, so ``journal query --session`` finds one
conversation's decisions.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio

from refusalkit.decide import DecisionPoint
from refusalkit.errors import UsageError
from refusalkit.journal import JournalAccess
from refusalkit.keyring import Keyring
from refusalkit.mcp_proxy._bridge import Bridge
from refusalkit.mcp_proxy._gate import Caller, Gate
from refusalkit.mcp_proxy._logsafe import quiet_sdk_parse_errors
from refusalkit.mcp_proxy._pins import PinSet
from refusalkit.mcp_proxy._pipes import client_stdio, server_stdio
from refusalkit.mcp_proxy._results import ResultMode

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
    checkpoint_s: float = 60.0,
    signer_state: Path | None = None,
    pins: PinSet | None = None,
    results: ResultMode = ResultMode.REDACT,
) -> AsyncIterator[Gate]:
    """A gate over an open journal (group-committed appends on their own thread).

    A checkpoint is signed every ``checkpoint_s`` seconds when there are new entries, and once
    more at the end, so ``journal verify`` and receipts cover the session's decisions. The
    journal is checked against ``signer_state`` (the keyring's signer state, docs/design/
    journal.md "Signer state") before any checkpoint is signed: a store rolled back, truncated
    or rewritten gets no new signature.
    """
    quiet_sdk_parse_errors()
    access = JournalAccess(
        journal, keyring, origin=None, max_group=_MAX_GROUP, signer_state=signer_state
    )
    await access.open()
    gate = Gate(
        point, access, keyring, server_name=server_name, shadow=shadow, timeout_s=timeout_s,
        report=report, pins=pins, results=results,
    )  # fmt: skip
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_checkpoints, gate, checkpoint_s)
            try:
                yield gate
            finally:
                tg.cancel_scope.cancel()
    finally:
        # Also when cancelled: SIGTERM and SIGINT cancel the command's task (cli/_mcp.py), and
        # the session's last decisions must still be covered by a checkpoint.
        with anyio.CancelScope(shield=True):
            try:
                await gate.checkpoint()
            finally:
                await access.close()


async def _checkpoints(gate: Gate, every_s: float) -> None:
    """Sign a checkpoint every ``every_s`` seconds while there is something new to cover."""
    while True:
        await anyio.sleep(every_s)
        await gate.checkpoint()


async def serve_stdio(gate: Gate, caller: Caller, command: Sequence[str]) -> None:
    """Serve MCP on this process's stdin/stdout, bridged to ``command``'s stdio, until EOF."""
    if not command:
        raise UsageError(
            "no server command to wrap",
            hint="Put the server's command after --, e.g. `refusalkit mcp wrap ... -- npx srv`.",
        )
    if shutil.which(command[0]) is None:
        raise UsageError(
            f"cannot run the server command {command[0]!r}: not found or not executable",
            hint="Give the server's command after --, with its full path if it is not on PATH.",
        )
    async with client_stdio() as (down_read, down_write), server_stdio(command, os.environ) as up:
        await Bridge(gate, caller).run(down_read, down_write, up[0], up[1])
        await gate.checkpoint()  # now: the client may stop this process while the server exits
