"""Both sides of ``mcp wrap``: MCP's stdio framing on the event loop, without threads or tasks.

The SDK's ``stdio_server`` reads and writes the standard streams through a worker thread per
line (``anyio.wrap_file``), which costs a thread hand-off per message each way. An MCP client
starts the wrapper with pipes for stdin and stdout, so here they are read and written as
non-blocking pipes on the asyncio loop instead. The framing is the same (MCP stdio transport:
one JSON-RPC message per line, UTF-8) and the messages are the SDK's own types, parsed and
serialised as the SDK does (written with orjson where that gives the same bytes: ``_jsonrpc.py``).
When stdin or stdout is not a pipe or socket (a terminal, a file), or the loop is not asyncio,
the SDK's ``stdio_server`` is used.

The server side (``server_stdio``) likewise reads and writes the server's pipes from the bridge's
own tasks: the SDK's ``stdio_client`` puts a reader task and a writer task, each behind an
in-memory stream, between the bridge and the pipes, two task hand-offs per message. The process
is started and stopped as the SDK does it (its own session, so its whole process group can be
stopped; stderr shared with the wrapper; on shutdown, MCP's lifecycle "Shutdown" for stdio:
its stdin closed, then ``SIGTERM`` to the group, then ``SIGKILL``).

As in the SDK, fd 0 and fd 1 are diverted (to ``/dev/null`` and to stderr, for the rest of the
process: the wrapper ends with its session), so a stray ``print`` cannot corrupt the wire; the
wire is served from private duplicates.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import cast

import anyio
from anyio.abc import Process
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from refusalkit.mcp_proxy._bridge import Receiver, Sender
from refusalkit.mcp_proxy._jsonrpc import dump_message
from refusalkit.mcp_proxy._loop import asyncio_loop

__all__ = ["client_stdio", "server_stdio"]

_LINE_LIMIT = 64 * 1024 * 1024  # the longest message accepted from the client
_SERVER_LINE_LIMIT = 1024 * 1024 * 1024  # from the server (the SDK's client sets none)
_EXIT_GRACE_S = 2.0  # for the server to exit once its stdin is closed (as the SDK's client)
_KILL_GRACE_S = 2.0  # after SIGTERM, before SIGKILL
_EXIT_POLL_S = 0.01


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _PipeReceiver:
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def __aiter__(self) -> AsyncIterator[SessionMessage | Exception]:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError as exc:  # a line over the limit: the stream cannot be resynced
                yield exc
                return
            if not line:
                return
            if not line.strip():
                continue
            try:
                yield SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:  # noqa: BLE001 (reported to the bridge, as the SDK does)
                yield exc


class _PipeSender:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: SessionMessage, /) -> None:
        data = dump_message(item.message)
        try:
            self._writer.write(data + b"\n")
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:  # the client went away
            raise anyio.BrokenResourceError from exc


@asynccontextmanager
async def client_stdio() -> AsyncIterator[tuple[Receiver, Sender]]:
    """Serve MCP's stdio transport on this process's stdin and stdout."""
    loop = asyncio_loop()
    if loop is None or not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as (read, write):
            try:
                yield read, write
            finally:  # the SDK's writer task ends only when its stream is closed
                await write.aclose()
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    in_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    out_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(out_transport, protocol, None, loop)
    try:
        yield _PipeReceiver(reader), _PipeSender(writer)
    finally:
        in_transport.close()
        out_transport.close()


@asynccontextmanager
async def server_stdio(
    command: Sequence[str], env: Mapping[str, str]
) -> AsyncIterator[tuple[Receiver, Sender]]:
    """Start ``command`` and speak MCP's stdio transport to it on its stdin and stdout."""
    if asyncio_loop() is None or sys.platform == "win32":
        params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(env))
        async with stdio_client(params) as (read, write):
            yield read, write
        return
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=sys.stderr, env=dict(env), start_new_session=True, limit=_SERVER_LINE_LIMIT,
    )  # fmt: skip
    assert process.stdin is not None  # both are pipes
    assert process.stdout is not None
    try:
        yield _PipeReceiver(process.stdout), _PipeSender(process.stdin)
    finally:
        with anyio.CancelScope(shield=True):  # also when cancelled: never leak the server
            await _stop(process)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """MCP lifecycle, Shutdown (stdio): close the server's stdin, give it time to exit, then
    ``SIGTERM`` and ``SIGKILL`` its process group (the SDK's own escalation)."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, RuntimeError):
        process.stdin.close()
    if not await _exited(process, _EXIT_GRACE_S):
        await terminate_posix_process_tree(cast(Process, process), _KILL_GRACE_S)
        await _exited(process, _KILL_GRACE_S)
    # A child of the server may hold its stdout open: release the pipes now, as the SDK does.
    transport = getattr(process, "_transport", None)
    if transport is not None:
        with contextlib.suppress(PermissionError):
            transport.close()


async def _exited(process: asyncio.subprocess.Process, within_s: float) -> bool:
    """Whether the process exits within ``within_s`` (its ``returncode``, polled: ``wait()``
    also waits for its pipes, which a surviving child of the server may hold open)."""
    deadline = anyio.current_time() + within_s
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_EXIT_POLL_S)
    return True
