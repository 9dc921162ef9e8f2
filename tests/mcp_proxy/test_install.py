"""``refusalkit mcp install``: each client's config, parsed as that client reads it, and its
command started the way the client starts it (the SDK's stdio client, with its trimmed default
environment: no ``$REFUSALKIT_KEYRING``, no ``$XDG_DATA_HOME``), from another directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from refusalkit.keyring import Keyring
from support.mcp_helpers import REFUSALKIT, journal_records, text

pytestmark = pytest.mark.timeout(120)

TOOLS = Path(__file__).resolve().parent.parent / "integrations" / "mcp_tools_server.py"
PACK = """policy: installed
version: v1
default: deny
rules:
  - {id: reads, effect: allow, when: {tool: tools.read_file}}
"""
EXISTING = {
    "claude-desktop": ("mcpServers", {"globalShortcut": "Ctrl+Space"}),
    "cursor": ("mcpServers", {}),
    "vscode": ("servers", {"inputs": [{"id": "key", "type": "promptString"}]}),
}


def _install(
    tmp: Path, client: str, keyring_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    (tmp / "pack.yaml").write_text(PACK)
    elsewhere = tmp / "cwd"
    elsewhere.mkdir(exist_ok=True)
    args = [REFUSALKIT, "mcp", "install", "--client", client, "--name", "tools",
            "--policy", "../pack.yaml", "--journal", "../j.db", "--keyring", str(keyring_path),
            "--config", str(tmp / "config.json"), *extra,
            "--", Path(sys.executable).name, str(TOOLS)]  # fmt: skip
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(args, cwd=elsewhere, capture_output=True, text=True, check=False, env=env)


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "vscode"])
def test_install_merges_an_entry_whose_command_a_client_can_start(
    client: str, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    key, settings = EXISTING[client]
    other = {"command": "other-server", "args": []}
    (tmp_path / "config.json").write_text(json.dumps({**settings, key: {"other": other}}))
    done = _install(tmp_path, client, keyring_path)
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "config.json").read_text())
    assert config[key]["other"] == other  # merged, not replaced
    for name, value in settings.items():
        assert config[name] == value
    entry = config[key]["tools"]
    if client == "vscode":
        assert entry["type"] == "stdio"
    assert Path(entry["command"]).is_absolute()
    args = entry["args"]
    for option in ("--policy", "--journal", "--keyring"):
        assert Path(args[args.index(option) + 1]).is_absolute()
    assert Path(args[args.index("--") + 1]).is_absolute()  # the server's own command too
    ran = tmp_path / "ran.log"

    async def main() -> tuple[set[str], Any]:
        params = StdioServerParameters(command=entry["command"], args=args,
                                       env={"RAN_LOG": str(ran)}, cwd="/")  # fmt: skip
        async with Client(params, mode="legacy") as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            return names, await session.call_tool("read_file", {"path": "/x"})

    names, result = anyio.run(main)
    assert names == {"read_file"}  # delete_file: no rule can allow it, so it is not listed
    assert text(result) == "contents of /x"
    [record] = journal_records(str(tmp_path / "j.db"), keyring)  # under the installed keyring
    assert record["matched_rule"] == "reads"


def test_print_writes_nothing_and_a_missing_keyring_is_refused(
    tmp_path: Path, keyring_path: Path
) -> None:
    done = _install(tmp_path, "cursor", keyring_path, "--print")
    assert done.returncode == 0, done.stderr
    assert "tools" in json.loads(done.stdout)["mcpServers"]
    assert not (tmp_path / "config.json").exists()
    missing = _install(tmp_path, "cursor", tmp_path / "nope.json")
    assert missing.returncode == 2
    assert "there is no keyring" in missing.stderr
