"""Fixtures of the MCP proxy tests.

The npm reference filesystem server is installed by ``.ci/run`` into ``.mcp-servers/`` (ignored
by git). Where it or Node.js is missing, its tests are skipped with a reason that names the install
command; in CI (``CI`` set) a missing server is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.mcp_helpers import FS_SERVER

# The command that installs it, exactly as .ci/run runs it (tests/test_docs.py keeps them equal).
INSTALL = (
    "npm install --prefix .mcp-servers --no-audit --no-fund --loglevel=error "
    "@modelcontextprotocol/server-filesystem@2026.8.31"
)


@pytest.fixture
def filesystem_server() -> Path:
    """The npm reference filesystem server, installed by ``.ci/run``; skipped, with the command
    that installs it, where it is missing (a failure in CI, which installs it)."""
    if FS_SERVER.exists() and shutil.which("node"):
        return FS_SERVER
    missing = (
        "Node.js is not installed, so the npm filesystem server cannot run"
        if shutil.which("node") is None
        else f"the npm filesystem server is not installed at {FS_SERVER}"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{missing}; CI must install it: `{INSTALL}`")
    pytest.skip(f"{missing}; install it with `{INSTALL}` (from the repository's folder)")
