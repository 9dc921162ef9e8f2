"""Fixtures of the MCP proxy tests.

The npm reference filesystem server is installed by ``.ci/run`` into ``.mcp-servers/``. Without
Node.js its tests are skipped with the reason; in CI (``CI`` set) a missing server is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.mcp_helpers import FS_SERVER


@pytest.fixture
def filesystem_server() -> Path:
    """The npm reference filesystem server, installed by ``.ci/run``."""
    if FS_SERVER.exists() and shutil.which("node"):
        return FS_SERVER
    if os.environ.get("CI"):
        pytest.fail(f"the npm filesystem server is required in CI, missing at {FS_SERVER}")
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the npm filesystem server cannot run")
    pytest.fail(
        f"{FS_SERVER} is missing: run `npm install --prefix .mcp-servers "
        "@modelcontextprotocol/server-filesystem` (as .ci/run does)"
    )
