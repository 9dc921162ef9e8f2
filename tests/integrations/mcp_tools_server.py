"""A stdio MCP server with two tools; each call that runs is appended to the file $RAN_LOG."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("tools")


def _ran(name: str) -> None:
    with Path(os.environ["RAN_LOG"]).open("a", encoding="utf-8") as log:
        log.write(name + "\n")


@server.tool()
def read_file(path: str) -> str:
    """Read a file."""
    _ran("read_file")
    return f"contents of {path}"


@server.tool()
def delete_file(path: str) -> str:
    """Delete a file."""
    _ran("delete_file")
    return "deleted"


if __name__ == "__main__":
    server.run("stdio")
