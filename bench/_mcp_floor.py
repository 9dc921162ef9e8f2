"""The MCP proxy's floor: a stdio relay between an MCP client and server that does nothing else.

``python bench/_mcp_floor.py MODE TAG -- SERVER...`` starts ``SERVER`` and relays every message
between it and the client on this process's stdin and stdout: no decision, no journal, no result
scan. ``bench/mcp_proxy.py`` runs it where it runs ``mcp wrap`` and measures its CPU a call the
same way; what ``mcp wrap`` spends above it is the proxy's own work. ``TAG`` is unused: a word in
the command line by which the bench finds this process (as a journal's path finds ``mcp wrap``).

``MODE``:

- ``sdk``: the SDK's own stdio transports alone, ``stdio_server`` towards the client and
  ``stdio_client`` towards the server, their ``SessionMessage`` streams forwarded both ways by two
  anyio tasks (each message parsed and validated, then serialised, as an SDK proxy does it);
- ``lines``: raw lines, read from and written to the four pipes on the asyncio loop, not parsed;
- ``lines-parse``: those raw lines, each parsed and validated with the SDK's JSON-RPC adapter and
  serialised again as the SDK's transports do it (``lines-parse`` minus ``lines`` is the SDK's
  parsing itself; ``sdk`` minus ``lines-parse`` is its transports' tasks, streams and threads).

The event loop is uvloop when it is installed, as for ``mcp wrap``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

MODES = ("sdk", "lines", "lines-parse")
_LINE_LIMIT = 1024 * 1024 * 1024


class _Source(Protocol):
    """A transport's read stream: messages, or the errors of lines that did not parse."""

    def __aiter__(self) -> AsyncIterator[SessionMessage | Exception]: ...


class _Sink(Protocol):
    """A transport's write stream."""

    async def send(self, item: SessionMessage, /) -> None: ...


async def _forward(source: _Source, sink: _Sink) -> None:
    async for message in source:
        if not isinstance(message, Exception):  # a line that did not parse: dropped
            await sink.send(message)


async def _sdk(server: list[str]) -> None:
    params = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    async with (
        stdio_server() as (from_client, to_client),
        stdio_client(params) as (from_server, to_server),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(_forward, from_server, to_client)
        await _forward(from_client, to_server)  # until the client closes our stdin
        tasks.cancel_scope.cancel()


def _parsed(line: bytes) -> bytes:
    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


async def _pump(
    read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Any], *, parse: bool
) -> None:
    while line := await read():
        write(_parsed(line) if parse else line)


async def _lines(server: list[str], *, parse: bool) -> None:
    loop = asyncio.get_running_loop()
    process = await asyncio.create_subprocess_exec(
        *server, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=_LINE_LIMIT
    )
    assert process.stdin is not None
    assert process.stdout is not None
    stdin = asyncio.StreamReader(limit=_LINE_LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdin), os.fdopen(os.dup(0), "rb")
    )
    stdout, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(os.dup(1), "wb"))
    back = asyncio.create_task(_pump(process.stdout.readline, stdout.write, parse=parse))
    await _pump(stdin.readline, process.stdin.write, parse=parse)  # until the client closes
    process.stdin.close()
    await process.wait()
    await back


def main() -> None:
    mode, _tag, dashes, *server = sys.argv[1:]
    if mode not in MODES or dashes != "--" or not server:
        sys.exit(f"usage: _mcp_floor.py {{{','.join(MODES)}}} TAG -- SERVER...")
    uvloop = sys.platform != "win32" and importlib.util.find_spec("uvloop") is not None
    if mode == "sdk":
        anyio.run(_sdk, server, backend_options={"use_uvloop": uvloop})
        return
    if uvloop:
        import uvloop as fast  # noqa: PLC0415

        with asyncio.Runner(loop_factory=fast.new_event_loop) as runner:
            runner.run(_lines(server, parse=mode == "lines-parse"))
    else:
        asyncio.run(_lines(server, parse=mode == "lines-parse"))


if __name__ == "__main__":
    main()
