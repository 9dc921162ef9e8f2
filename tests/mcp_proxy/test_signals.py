"""``mcp wrap`` and ``mcp proxy`` stopped by SIGTERM or SIGINT sign a final checkpoint first.

Real processes, real signals: a call is decided and journaled, the process is signalled (its
periodic checkpoint is a minute away), and the journal's latest signed checkpoint must cover the
call's entry once the process has exited.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import LATEST_PROTOCOL_VERSION

from refusalkit.journal import open_journal, parse_note
from refusalkit.keyring import Keyring
from support.mcp_helpers import (
    PACK,
    REFUSALKIT,
    free_port,
    python_upstream,
    python_upstream_http,
    running,
    wait_listening,
    wrap_params,
)

pytestmark = pytest.mark.timeout(120)
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])


def _checkpointed_size(journal: Path, keyring: Keyring) -> tuple[int, int | None]:
    """(entries, tree size of the latest signed checkpoint)."""
    with open_journal(str(journal), keyring) as log:
        size, latest = log.size(), log.latest_checkpoint()
    return size, None if latest is None else int(parse_note(latest)[0].splitlines()[1])


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def _answer(pipe: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = pipe.readline()
        assert line, "the wrapper closed its output"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    process.send_signal(sig)
    try:
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@SIGNALS
def test_wrap_signs_a_final_checkpoint_when_signalled(
    tmp_path: Path, keyring: Keyring, keyring_path: Path, sig: signal.Signals
) -> None:
    journal = tmp_path / "j.db"
    params = wrap_params(str(journal), keyring_path, python_upstream())
    process = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    hello = {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "signal-test", "version": "1"},
    }
    _send(process.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    assert "result" in _answer(process.stdout, 1)
    _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "read_file", "arguments": {"path": "/work/a.txt"}}
    _send(process.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert "result" in _answer(process.stdout, 2)
    status = _stop(process, sig)  # stdin stays open: only the signal stops it
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert _checkpointed_size(journal, keyring) == (1, 1), stderr


@SIGNALS
def test_proxy_signs_a_final_checkpoint_when_signalled(
    tmp_path: Path, keyring: Keyring, keyring_path: Path, sig: signal.Signals
) -> None:
    journal = tmp_path / "j.db"
    upstream, port = free_port(), free_port()
    args = [
        REFUSALKIT, "mcp", "proxy", "--upstream", f"http://127.0.0.1:{upstream}/mcp",
        "--policy", str(PACK), "--journal", str(journal), "--keyring", str(keyring_path),
        "--server-name", "py", "--agent", "tester", "--insecure-no-auth",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    with running(python_upstream_http(upstream), upstream):
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_listening(port, process)

            async def call() -> None:
                http = httpx2.AsyncClient(timeout=httpx2.Timeout(30))
                url = f"http://127.0.0.1:{port}/mcp"
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    await client.call_tool("echo", {"text": "before the signal"})

            anyio.run(call)
            status = _stop(process, sig)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert _checkpointed_size(journal, keyring) == (1, 1), stderr
