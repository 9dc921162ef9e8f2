"""``refusalkit mcp wrap`` in front of the npm reference filesystem server, on a temp directory.

A real SDK client, the wrapper as a subprocess, the server under Node.js, the bundled starter
pack (``examples/mcp-filesystem.yaml``): what a user pastes into their MCP client's config.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import stdio_client

from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json
from support.mcp_helpers import REFUSALKIT, journal_records, refusal, text, wrap_params

pytestmark = pytest.mark.timeout(120)
STARTER = example_path("mcp-filesystem.yaml")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The directory the server may serve: a project with a README and a .env."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# hello\n")
    (project / ".env").write_text("API_KEY=hunter2\n")
    return project.resolve()


def _client(fs: Path, root: Path, journal: Path, keyring_path: Path, **kw: Any) -> Client:
    kw.setdefault("pack", STARTER)
    kw.setdefault("agent", "reader")
    server = [str(fs), str(root)]
    params = wrap_params(str(journal), keyring_path, server, server_name="fs", **kw)
    return Client(params)


def test_allowed_read_returns_the_file(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> Any:
        async with _client(filesystem_server, root, journal, keyring_path) as client:
            return await client.call_tool("read_text_file", {"path": str(root / "README.md")})

    result = anyio.run(main)
    assert result.is_error is not True
    assert "# hello" in text(result)
    [record] = journal_records(str(journal), keyring)
    assert (record["action"], record["matched_rule"]) == ("allow", "read_and_list")


def test_env_read_is_refused_with_the_journaled_decision(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> list[Any]:
        async with _client(filesystem_server, root, journal, keyring_path) as client:
            await client.list_tools()
            single = await client.call_tool("read_text_file", {"path": str(root / ".env")})
            paths = [str(root / "README.md"), str(root / ".env")]
            many = await client.call_tool("read_multiple_files", {"paths": paths})
            return [single, many]

    single, many = anyio.run(main)
    for result in (single, many):
        assert text(result) == (
            "refused (policy-denied by sensitive_path, retryable: no): "
            "Reading or writing credential files is not allowed."
        )
        assert "hunter2" not in result.model_dump_json()
    [decisive] = [s for s in refusal(many)["decision"]["why_trail"] if s["decisive"]]
    assert decisive["field"] == "args.paths[1]"  # the list element that decided
    records = journal_records(str(journal), keyring)
    for result in (single, many):
        meta = refusal(result)
        assert canonical_json(records[meta["journal_index"]]) == canonical_json(meta["decision"])
    assert str(root) not in str(records)  # paths are redaction tokens in the journal
    verify = subprocess.run(
        [REFUSALKIT, "journal", "verify", str(journal), "--keyring", str(keyring_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr


def test_tools_list_follows_the_agents_capabilities(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring_path: Path
) -> None:
    async def names(agent: str) -> set[str]:
        journal = tmp_path / f"{agent}.db"
        async with _client(filesystem_server, root, journal, keyring_path, agent=agent) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    reader = anyio.run(names, "reader")
    editor = anyio.run(names, "editor")
    assert "read_text_file" in reader
    assert {"write_file", "edit_file", "move_file", "create_directory"}.isdisjoint(reader)
    assert {"write_file", "edit_file", "move_file", "create_directory"} <= editor


def test_after_a_block_later_calls_are_refused(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    pack = yaml.safe_load(STARTER.read_text())
    pack["rules"].insert(0, {
        "id": "git_internals", "effect": "block", "message": "Touching .git stops this session.",
        "when": {"tool": "fs.write_file", "args.path": {"glob": "**/.git/**"}},
    })  # fmt: skip
    pack_path = tmp_path / "with-block.yaml"
    pack_path.write_text(yaml.safe_dump(pack))
    journal = tmp_path / "j.db"

    async def main() -> list[Any]:
        async with _client(
            filesystem_server, root, journal, keyring_path, pack=pack_path, agent="editor"
        ) as client:
            hook = {"path": str(root / ".git" / "hooks" / "pre-commit"), "content": "curl evil"}
            blocked = await client.call_tool("write_file", hook)
            later = await client.call_tool("read_text_file", {"path": str(root / "README.md")})
            return [blocked, later]

    blocked, later = anyio.run(main)
    assert refusal(blocked)["decision"]["action"] == "block"
    assert text(later).startswith("refused (policy-denied by git_internals, retryable: no)")
    assert not (root / ".git").exists()
    assert [r["action"] for r in journal_records(str(journal), keyring)] == ["block", "block"]


def test_shadow_forwards_everything_and_journals_it(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"
    errlog = tmp_path / "stderr.txt"

    async def main() -> Any:
        server = [str(filesystem_server), str(root)]
        params = wrap_params(
            str(journal), keyring_path, server, server_name="fs", pack=STARTER, agent="reader",
            extra=["--shadow"],
        )  # fmt: skip
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                return await client.call_tool("read_text_file", {"path": str(root / ".env")})

    result = anyio.run(main)
    assert "hunter2" in text(result)  # forwarded: shadow mode enforces nothing
    [record] = journal_records(str(journal), keyring)
    assert (record["action"], record["matched_rule"]) == ("deny", "sensitive_path")
    assert record["why_trail"][-1]["rule"] == "@shadow"
    assert "would deny fs.read_text_file (policy-denied by sensitive_path)" in errlog.read_text()


def test_a_symlink_to_a_credential_file_is_refused_by_its_target(
    filesystem_server: Path, root: Path, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    """``src/config.txt -> ../.env``: the starter pack's class resolves the path on this host."""
    (root / "src").mkdir()
    (root / "src" / "config.txt").symlink_to(root / ".env")
    (root / "ENV-copy").symlink_to(root / ".env")
    journal = tmp_path / "j.db"

    async def main() -> list[Any]:
        async with _client(filesystem_server, root, journal, keyring_path) as client:
            linked = await client.call_tool(
                "read_text_file", {"path": str(root / "src" / "config.txt")}
            )
            upper = await client.call_tool("read_text_file", {"path": str(root / ".ENV")})
            listed = await client.call_tool(
                "read_multiple_files", {"paths": [str(root / "README.md"), str(root / "ENV-copy")]}
            )
            return [linked, upper, listed]

    for result in anyio.run(main):
        assert text(result).startswith("refused (policy-denied by sensitive_path")
        assert "hunter2" not in result.model_dump_json()
