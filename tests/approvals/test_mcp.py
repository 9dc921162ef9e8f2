"""The MCP proxy and approvals: a real SDK client, ``refusalkit mcp wrap``, the Python upstream,
and an approver granting on the command line while the session stays open."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.keyring import Keyring
from support.mcp_helpers import journal_records, python_upstream, refusal, text, wrap_params

pytestmark = pytest.mark.timeout(180)
PACK = Path(__file__).with_name("mcp-pack.yaml")
_REQUEST = re.compile(r"\[approval request ([0-9a-f-]{36})\]$")


def test_approval_required_then_granted_once(
    store_url: str, keyring: Keyring, keyring_path: Path
) -> None:
    params = wrap_params(store_url, keyring_path, python_upstream(), pack=PACK)
    push = {"command": "git push origin v1.2.0"}
    grant = [
        "approvals",
        "grant",
        store_url,
        "",
        "--approver",
        "alice",
        "--keyring",
        str(keyring_path),
    ]

    async def main() -> list[str]:
        seen: list[str] = []
        async with Client(params, mode="legacy") as client:
            asked = await client.call_tool("run", push)
            line = text(asked)
            assert refusal(asked)["decision"]["reason_code"] == "approval-required"
            match = _REQUEST.search(line)
            assert match is not None, line
            seen.append(line)
            grant[3] = match.group(1)
            result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(app, grant))
            assert result.exit_code == 0, result.output
            allowed = await client.call_tool("run", push)
            assert allowed.is_error is not True
            seen.append(text(allowed))
            again = await client.call_tool("run", push)
            assert refusal(again)["decision"]["reason_code"] == "approval-required"
            seen.append(text(again))
            other = await client.call_tool("run", {"command": "git push origin v9"})
            assert refusal(other)["decision"]["reason_code"] == "approval-required"
        return seen

    asked, allowed, again = anyio.run(main)[:3]
    assert asked.startswith("refused (approval-required by push_needs_approval, retryable: yes)")
    assert "git push origin v1.2.0" in allowed  # the upstream ran the call
    assert _REQUEST.search(again) is not None
    records = journal_records(store_url, keyring)
    kinds = [(r.get("schema"), r.get("action")) for r in records]
    assert kinds == [
        ("refusalkit.decision/v1", "deny"),
        ("refusalkit.approval-grant/v1", None),
        ("refusalkit.decision/v1", "allow"),
        ("refusalkit.decision/v1", "deny"),
        ("refusalkit.decision/v1", "deny"),
    ]
    assert records[2]["approval"]["grant_index"] == 1
    assert "already used" in records[3]["why_trail"][-1]["detail"]
    assert "arguments differ" in records[4]["why_trail"][-1]["detail"]
