"""``refusalkit mcp install``: put ``mcp wrap`` in an MCP client's config (docs/mcp.md, Install).

A client starts a server's ``command`` from its own directory with a trimmed environment: a bare
``refusalkit`` is not found (it lives in a virtual environment), and a keyring found through
``$REFUSALKIT_KEYRING`` or the user's data directory may be another one. So every path written is
absolute: the refusalkit executable, the pack, the journal (a SQLite file; a ``postgresql://``
URL is kept as given), the keyring, the pin file, and the server's own command. The entry is
merged into the config: other servers and other settings are kept as they were.

The config formats: Claude Desktop (``claude_desktop_config.json``) and Cursor (``mcp.json``)
hold ``{"mcpServers": {NAME: {"command", "args"}}}``; VS Code (``.vscode/mcp.json``) holds
``{"servers": {NAME: {"type": "stdio", "command", "args"}}}``.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from refusalkit._durable import write_durably
from refusalkit.cli._common import KeyringOption, err_console, keyring_file, out_console
from refusalkit.cli._mcp import mcp_app
from refusalkit.errors import UsageError

__all__ = ["McpClient", "config_path", "merged_config", "wrap_entry"]


class McpClient(enum.StrEnum):
    """The MCP clients whose config ``mcp install`` writes."""

    CLAUDE_DESKTOP = "claude-desktop"
    CURSOR = "cursor"
    VSCODE = "vscode"


def config_path(client: McpClient, home: Path, cwd: Path, platform: str = sys.platform) -> Path:
    """Where ``client`` reads its MCP servers from (VS Code: the workspace's file)."""
    if client is McpClient.CURSOR:
        return home / ".cursor" / "mcp.json"
    if client is McpClient.VSCODE:
        return cwd / ".vscode" / "mcp.json"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if platform.startswith("win"):
        appdata = Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
        return appdata / "Claude" / "claude_desktop_config.json"
    return home / ".config" / "Claude" / "claude_desktop_config.json"


def wrap_entry(client: McpClient, executable: str, args: Sequence[str]) -> dict[str, Any]:
    """One server entry in ``client``'s format."""
    entry: dict[str, Any] = {"command": executable, "args": list(args)}
    return {"type": "stdio", **entry} if client is McpClient.VSCODE else entry


def merged_config(
    client: McpClient, existing: Mapping[str, Any], name: str, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """``existing`` with the server ``name`` set to ``entry``; everything else kept."""
    key = "servers" if client is McpClient.VSCODE else "mcpServers"
    servers = existing.get(key, {})
    if not isinstance(servers, dict):
        raise UsageError(f"the config's {key!r} is not an object", hint="Fix the file, or --print.")
    return {**existing, key: {**servers, name: dict(entry)}}


def _absolute(path: Path) -> str:
    return str(path.expanduser().resolve())


def _store(journal: str) -> str:
    return journal if "://" in journal else _absolute(Path(journal))


def _executable() -> str:
    """This refusalkit's own executable: beside the interpreter, else the one on PATH."""
    beside = Path(sys.executable).with_name("refusalkit")
    if beside.exists():
        return str(beside)
    found = shutil.which("refusalkit")
    if found is None:
        raise UsageError(
            "cannot find the refusalkit executable", hint="Run this from the refusalkit install."
        )
    return str(Path(found).resolve())


def _server(command: Sequence[str]) -> list[str]:
    if not command:
        raise UsageError(
            "no server command to wrap",
            hint="Put it after --, e.g. `refusalkit mcp install ... -- npx -y @scope/server`.",
        )
    found = shutil.which(command[0])
    if found is None:
        raise UsageError(
            f"cannot find the server command {command[0]!r}",
            hint="Give its full path: the client starts it with its own PATH.",
        )
    return [str(Path(found).absolute()), *command[1:]]


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"cannot read {path} as JSON: {exc}",
            hint="Fix the file (comments are not JSON), or use --print and paste the entry.",
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object", hint="Fix the file, or --print.")
    return data


@mcp_app.command(
    "install", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
)
def install_command(
    *,
    client: Annotated[McpClient, typer.Option("--client", help="The MCP client to configure.")],
    name: Annotated[str, typer.Option("--name", help="The server's name in the config.")],
    policy: Annotated[Path, typer.Option("--policy", "-p", help="Policy pack (YAML or JSON).")],
    journal: Annotated[str, typer.Option("--journal", help="SQLite file or postgresql:// URL.")],
    command: Annotated[
        list[str], typer.Argument(metavar="-- CMD ARGS...", help="The MCP server's command line.")
    ],
    agent: Annotated[str | None, typer.Option("--agent", help="caller.agent.")] = None,
    server_name: Annotated[
        str | None, typer.Option("--server-name", help="Prefix of the tools (default: --name).")
    ] = None,
    pin: Annotated[Path | None, typer.Option("--pin", help="Pin file.", metavar="FILE")] = None,
    keyring: KeyringOption = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="The config file (default: the client's).")
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the merged config instead of writing it.")
    ] = False,
) -> None:
    """Add `mcp wrap` in front of a stdio server to an MCP client's config, with absolute paths."""
    if not policy.exists():
        raise UsageError(f"there is no pack at {policy}", hint="Give --policy an existing file.")
    ring = keyring_file(keyring)
    if not ring.exists():
        raise UsageError(
            f"there is no keyring at {ring}",
            hint="Make one with `refusalkit keys init`, or give --keyring: the client's "
            "environment may not name the same one.",
        )
    args = ["mcp", "wrap", "--policy", _absolute(policy), "--journal", _store(journal),
            "--keyring", _absolute(ring), "--server-name", server_name or name]  # fmt: skip
    if agent is not None:
        args += ["--agent", agent]
    if pin is not None:
        args += ["--pin", _absolute(pin)]
    entry = wrap_entry(client, _executable(), [*args, "--", *_server(command)])
    target = config or config_path(client, Path.home(), Path.cwd())
    merged = merged_config(client, _read(target), name, entry)
    text = json.dumps(merged, indent=2) + "\n"
    if print_only:
        out_console.print(text, markup=False, highlight=False, end="")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    write_durably(target, text)
    err_console.print(f"wrote the server {name!r} into {target}; restart the client", markup=False)
