"""Helpers of the MCP proxy tests: how a client starts the wrapper, what a refusal holds.

Everything is real: ``refusalkit mcp wrap`` runs as a subprocess between an SDK client and either
the Python upstream (``mcp_upstream.py``) or the npm reference filesystem server, which
``.ci/run`` installs into ``.mcp-servers/``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters
from mcp_types import CallToolResult

from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PACK = REPO / "tests" / "mcp_proxy" / "pack.yaml"
UPSTREAM = HERE / "mcp_upstream.py"
FS_SERVER = REPO / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-filesystem"
META_KEY = "io.refusalkit/decision"
REFUSALKIT = str(Path(sys.executable).with_name("refusalkit"))


def wrap_params(
    journal: str,
    keyring_path: Path,
    server: Sequence[str],
    *,
    server_name: str = "py",
    agent: str | None = "tester",
    extra: Sequence[str] = (),
    pack: Path = PACK,
) -> StdioServerParameters:
    """How an MCP client starts ``refusalkit mcp wrap`` in front of ``server``."""
    args = ["mcp", "wrap", "--policy", str(pack), "--journal", journal,
            "--keyring", str(keyring_path), "--server-name", server_name, *extra]  # fmt: skip
    if agent is not None:
        args += ["--agent", agent]
    return StdioServerParameters(
        command=REFUSALKIT, args=[*args, "--", *server], env=dict(os.environ)
    )


def python_upstream() -> list[str]:
    """The Python upstream over stdio."""
    return [sys.executable, str(UPSTREAM), "stdio"]


def refusal(result: CallToolResult) -> dict[str, Any]:
    """The ``_meta`` refusal object of a refused call (asserts it is one)."""
    assert result.is_error is True
    assert result.meta is not None
    meta: dict[str, Any] = result.meta[META_KEY]
    return meta


def text(result: CallToolResult) -> str:
    """The single text content of a result."""
    [content] = result.content
    assert content.type == "text"
    return str(content.text)


def journal_records(journal: str, keyring: Keyring) -> list[dict[str, Any]]:
    """Every journal entry, parsed."""
    with open_journal(journal, keyring) as log:
        return [json.loads(raw) for raw in log.entries(0, log.size())]


def free_port() -> int:
    """A port nothing listens on right now (for a subprocess server to bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """Wait until something accepts connections on ``port``; fail if ``process`` exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


@contextmanager
def running(
    args: Sequence[str], port: int, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A server subprocess listening on ``port``; stopped (SIGTERM, then SIGKILL) afterwards."""
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        wait_listening(port, process)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def python_upstream_http(port: int) -> list[str]:
    """The Python upstream over Streamable HTTP on ``port``."""
    return [sys.executable, str(UPSTREAM), "http", str(port)]
