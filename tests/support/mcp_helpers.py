"""Helpers of the MCP proxy tests: how a client starts the wrapper, what a refusal holds.

Everything is real: ``refusalkit mcp wrap`` runs as a subprocess between an SDK client and either
the Python upstream (``mcp_upstream.py``) or the npm reference filesystem server, which
``.ci/run`` installs into ``.mcp-servers/``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from mcp import StdioServerParameters
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PACK = REPO / "tests" / "mcp" / "pack.yaml"
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
