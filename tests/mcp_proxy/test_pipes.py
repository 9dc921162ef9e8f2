"""``mcp wrap``'s stdio towards the server (``_pipes.server_stdio``): real processes, real pipes.

The wrapper speaks to the server from the bridge's own tasks (no reader or writer task between
them), and stops it as MCP's lifecycle says for stdio (docs/design/mcp.md): its stdin closed,
then ``SIGTERM`` to its process group, then ``SIGKILL``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest, JSONRPCResponse

from refusalkit.mcp_proxy._pipes import server_stdio

pytestmark = pytest.mark.timeout(60)

# Answers every request line with its id, until its stdin ends (then exits, unless told to
# linger: ``ignore-eof`` stays, ``ignore-term`` also ignores SIGTERM; ``child`` leaves a
# grandchild in its process group that writes its pid first).
_SERVER = r"""
import json, os, signal, subprocess, sys, time
mode = sys.argv[1]
if mode == "child":
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(json.dumps({"jsonrpc": "2.0", "method": "kid", "params": {"pid": kid.pid}}), flush=True)
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in sys.stdin:
    request = json.loads(line)
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["params"]}}
    print(json.dumps(answer), flush=True)
if mode != "plain":
    while True:
        time.sleep(1)
"""


def _server(tmp_path: Path, mode: str) -> list[str]:
    script = tmp_path / "server.py"
    script.write_text(_SERVER)
    return [sys.executable, str(script), mode]


def _request(n: int) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=n, method="x", params={"n": n}))


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie (its new parent may not reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def _round_trip(command: list[str]) -> tuple[list[JSONRPCResponse], int, int]:
    """Three requests and their answers; the tasks running before and during the session."""
    before = len(asyncio.all_tasks())
    answers = []
    async with server_stdio(command, os.environ) as (read, write):
        during = len(asyncio.all_tasks())
        for n in range(3):
            await write.send(_request(n))
        async for item in read:
            assert isinstance(item, SessionMessage)
            if isinstance(item.message, JSONRPCResponse):
                answers.append(item.message)
            if len(answers) == 3:
                break
    return answers, before, during


def test_messages_cross_with_no_task_in_between(tmp_path: Path) -> None:
    answers, before, during = anyio.run(_round_trip, _server(tmp_path, "plain"))
    assert [(a.id, a.result) for a in answers] == [(n, {"echo": {"n": n}}) for n in range(3)]
    assert during == before  # the SDK's client runs a reader and a writer task per session


async def _session_then_stop(command: list[str]) -> tuple[int | None, float]:
    """Run one request, end the session; the grandchild's pid (if any) and the stop's time."""
    kid = None
    async with server_stdio(command, os.environ) as (read, write):
        await write.send(_request(1))
        async for item in read:
            assert isinstance(item, SessionMessage)
            message = item.message
            if getattr(message, "method", None) == "kid":
                kid = message.params["pid"]  # type: ignore[union-attr,index]
            if isinstance(message, JSONRPCResponse):
                break
        started = time.monotonic()
    return kid, time.monotonic() - started


def test_a_server_that_exits_on_eof_is_not_signalled(tmp_path: Path) -> None:
    _, took = anyio.run(_session_then_stop, _server(tmp_path, "plain"))
    assert took < 1.5  # closing stdin was enough: no grace period ran out


@pytest.mark.parametrize("mode", ["ignore-eof", "ignore-term"])
def test_a_server_that_stays_is_stopped(tmp_path: Path, mode: str) -> None:
    _, took = anyio.run(_session_then_stop, _server(tmp_path, mode))
    assert took >= 2.0  # the grace period after stdin closed, then SIGTERM (and SIGKILL)


def test_the_servers_process_group_is_stopped(tmp_path: Path) -> None:
    kid, _ = anyio.run(_session_then_stop, _server(tmp_path, "child"))
    assert kid is not None
    deadline = time.monotonic() + 5
    while not _gone(kid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(kid)  # SIGTERM went to the group, not only to the server


def test_a_server_that_cannot_start_raises_oserror(tmp_path: Path) -> None:
    async def main() -> None:
        async with server_stdio([str(tmp_path / "missing")], os.environ):
            pass

    with pytest.raises(OSError):  # the same error as the SDK client
        anyio.run(main)


def test_a_line_that_is_not_utf8_is_reported_and_the_next_one_arrives(tmp_path: Path) -> None:
    """Each line is decoded on its own: a bad one is a malformed message, not the end."""
    script = tmp_path / "bad.py"
    script.write_text(
        "import sys\n"
        'sys.stdout.buffer.write(b\'{"jsonrpc": "2.0", "method": "x\\xff"}\\n\')\n'
        'sys.stdout.buffer.write(b\'{"jsonrpc": "2.0", "method": "ok"}\\n\')\n'
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )

    async def main() -> list[object]:
        seen: list[object] = []
        async with server_stdio([sys.executable, str(script)], os.environ) as (read, _):
            async for item in read:
                seen.append(item)
                if len(seen) == 2:
                    break
        return seen

    bad, good = anyio.run(main)
    assert isinstance(bad, Exception)
    assert isinstance(good, SessionMessage)
    assert getattr(good.message, "method", None) == "ok"
