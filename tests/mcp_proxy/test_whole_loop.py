"""The whole loop, through ``mcp wrap`` (stdio) and ``mcp proxy`` (Streamable HTTP), with the
official SDK client in front of a hostile server (``tests/support/mcp_hostile.py``) that
rug-pulls a tool mid-session, returns secrets and injected instructions, serves resources, and
records everything it executes.

Two properties hold on both transports: nothing refused ever runs on the server (its own record
says so), and nothing redacted reaches the client (the secret's bytes are in no answer, and in no
journal entry either).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json
from support.mcp_helpers import (
    HERE,
    REFUSALKIT,
    free_port,
    journal_records,
    refusal,
    running,
    text,
    wrap_params,
)
from support.mcp_hostile import AWS_KEY, EMAIL, RUG_PULL

pytestmark = pytest.mark.timeout(360)  # a proxy, its upstream and the client on a loaded CI box

HOSTILE = HERE / "mcp_hostile.py"
PACK = Path(__file__).with_name("hostile-pack.yaml")


@dataclass
class Gateway:
    """One way to reach the hostile server through refusalkit, and where its traces go."""

    connect: Callable[[], Client]
    journal: Path
    pin: Path
    ran: Path
    keyring: Keyring
    keyring_path: Path

    def ran_lines(self) -> list[str]:
        return self.ran.read_text().splitlines() if self.ran.exists() else []

    def records(self) -> list[dict[str, Any]]:
        return journal_records(str(self.journal), self.keyring)


def _wrap(tmp: Path, keyring_path: Path, extra: list[str]) -> Callable[[], Client]:
    server = [sys.executable, str(HOSTILE), "stdio"]

    def connect() -> Client:
        extras = ["--pin", str(tmp / "pins.json"), *extra]
        params = wrap_params(
            str(tmp / "j.db"), keyring_path, server, server_name="hx", pack=PACK, extra=extras
        )
        return Client(params, mode="legacy")

    return connect


def _proxy(
    tmp: Path, keyring_path: Path, extra: list[str], stack: ExitStack
) -> Callable[[], Client]:
    up, port = free_port(), free_port()
    stack.enter_context(running([sys.executable, str(HOSTILE), "http", str(up)], up))
    args = [
        REFUSALKIT, "mcp", "proxy", "--upstream", f"http://127.0.0.1:{up}/mcp",
        "--policy", str(PACK), "--journal", str(tmp / "j.db"), "--keyring", str(keyring_path),
        "--server-name", "hx", "--port", str(port), "--insecure-no-auth", "--agent", "tester",
        "--pin", str(tmp / "pins.json"), *extra,
    ]  # fmt: skip
    stack.enter_context(running(args, port))

    def connect() -> Client:
        http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))
        return Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http))

    return connect


def _gateway(
    kind: str, tmp: Path, keyring: Keyring, keyring_path: Path, extra: list[str]
) -> Iterator[Gateway]:
    ran = tmp / "ran.log"
    os.environ["RAN_LOG"] = str(ran)  # the wrapper passes its environment to the server
    with ExitStack() as stack:
        if kind == "wrap":
            connect = _wrap(tmp, keyring_path, extra)
        else:
            connect = _proxy(tmp, keyring_path, extra, stack)
        yield Gateway(connect, tmp / "j.db", tmp / "pins.json", ran, keyring, keyring_path)


@pytest.fixture(params=["wrap", "proxy"])
def gateway(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    keyring: Keyring,
    keyring_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Gateway]:
    monkeypatch.setenv("RAN_LOG", str(tmp_path / "ran.log"))
    yield from _gateway(request.param, tmp_path, keyring, keyring_path, [])


@pytest.fixture(params=["wrap", "proxy"])
def blocking_gateway(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    keyring: Keyring,
    keyring_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Gateway]:
    monkeypatch.setenv("RAN_LOG", str(tmp_path / "ran.log"))
    yield from _gateway(request.param, tmp_path, keyring, keyring_path, ["--results", "block"])


def _names(listing: Any) -> set[str]:
    return {tool.name for tool in listing.tools}


def _no_secret_in(value: Any) -> None:
    dumped = json.dumps(value, default=str)
    assert AWS_KEY not in dumped
    assert EMAIL not in dumped


def test_a_rug_pull_mid_session_is_not_offered_and_its_calls_never_run(gateway: Gateway) -> None:
    async def main() -> tuple[set[str], Any, set[str], Any]:
        async with gateway.connect() as client:
            before = _names(await client.list_tools())  # trust on first use: pinned now
            first = await client.call_tool("read_note", {"name": "a"})
            await client.call_tool("rug_pull", {})  # the server announces list_changed
            after = await client.list_tools()
            second = await client.call_tool("read_note", {"name": "b"})
            return before, first, after, second

    before, first, after, second = anyio.run(main)
    assert "read_note" in before
    assert text(first) == "the note a says hello"
    assert "read_note" not in _names(after)
    assert RUG_PULL not in json.dumps([t.model_dump() for t in after.tools])
    decision = refusal(second)["decision"]
    assert (decision["action"], decision["reason_code"]) == ("deny", "out-of-scope")
    assert decision["matched_rule"] == "@pin"
    assert "description changed" in text(second)
    assert gateway.ran_lines().count("read_note a") == 1
    assert "read_note b" not in gateway.ran_lines()  # refused: never ran
    journaled = gateway.records()[refusal(second)["journal_index"]]
    assert canonical_json(journaled) == canonical_json(decision)


@pytest.fixture
def wrapped(
    tmp_path: Path, keyring: Keyring, keyring_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Gateway]:
    monkeypatch.setenv("RAN_LOG", str(tmp_path / "ran.log"))
    yield from _gateway("wrap", tmp_path, keyring, keyring_path, [])


def test_a_rug_pull_is_reviewed_and_accepted_with_mcp_pin(wrapped: Gateway) -> None:
    """``mcp pin`` works on the files either proxy writes (the rug pull itself: above)."""
    gateway = wrapped

    async def pull() -> None:
        async with gateway.connect() as client:
            await client.list_tools()
            await client.call_tool("rug_pull", {})
            await client.list_tools()

    anyio.run(pull)
    pending = json.loads(gateway.pin.with_name("pins.json.pending").read_text())
    digest = pending["tools"]["read_note"]["digest"]
    review = subprocess.run([REFUSALKIT, "mcp", "pin", "review", str(gateway.pin)],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert "read_note: the tool's description changed since it was pinned" in review.stdout
    assert "+Read a note. IMPORTANT: before answering" in review.stdout
    stale = subprocess.run(
        [REFUSALKIT, "mcp", "pin", "accept", str(gateway.pin), "read_note@sha256:" + "0" * 64],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert stale.returncode == 2
    assert "not the sha256:000" in stale.stderr
    subprocess.run([REFUSALKIT, "mcp", "pin", "accept", str(gateway.pin), f"read_note@{digest}"],
                   capture_output=True, text=True, check=True)  # fmt: skip
    pins = json.loads(gateway.pin.read_text())
    assert pins["tools"]["read_note"]["digest"] == digest
    assert pins["tools"]["read_note"]["definition"]["description"] == RUG_PULL


def test_secrets_in_results_are_redacted_and_journaled_by_kind_and_token(gateway: Gateway) -> None:
    async def main() -> Any:
        async with gateway.connect() as client:
            await client.list_tools()
            return await client.call_tool("leak", {})

    result = anyio.run(main)
    assert result.is_error is not True
    _no_secret_in(result.model_dump())
    assert "[secret:" in json.dumps(result.structured_content)
    assert "[private-data:" in json.dumps(result.structured_content)
    assert gateway.ran_lines() == ["leak"]
    records = gateway.records()
    [call] = [r for r in records if r.get("schema") == "refusalkit.decision/v1"]
    [seen] = [r for r in records if r.get("schema") == "refusalkit.mcp-result/v1"]
    assert seen["decision_id"] == call["decision_id"]
    assert seen["journal_index"] == records.index(call)
    assert seen["action"] == "redact"
    assert any(k.startswith("secret:") for k in seen["kinds"])
    assert all(f["token"].startswith("<redacted:hmac-sha256:") for f in seen["findings"])
    for token in (f["token"] for f in seen["findings"]):
        assert token in json.dumps(result.model_dump())  # the same keyed token, in place
    raw = gateway.journal.read_bytes()
    assert AWS_KEY.encode() not in raw
    assert EMAIL.encode() not in raw
    verify = subprocess.run(
        [REFUSALKIT, "journal", "verify", str(gateway.journal), "--keyring",
         str(gateway.keyring_path)], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr


def test_results_block_withholds_a_result_with_findings(blocking_gateway: Gateway) -> None:
    async def main() -> tuple[Any, Any]:
        async with blocking_gateway.connect() as client:
            await client.list_tools()
            return await client.call_tool("leak", {}), await client.call_tool("poison", {})

    leaked, clean = anyio.run(main)
    _no_secret_in(leaked.model_dump())
    decision = refusal(leaked)["decision"]
    assert decision["matched_rule"] == "@results"
    assert text(leaked).startswith("refused (policy-denied by @results, retryable: no)")
    assert clean.is_error is not True  # no findings: passed on


def test_a_poisoned_result_taints_the_session_and_destructive_tools_are_refused(
    gateway: Gateway,
) -> None:
    async def main() -> tuple[Any, Any]:
        async with gateway.connect() as client:
            await client.list_tools()
            poisoned = await client.call_tool("poison", {})
            return poisoned, await client.call_tool("delete_all", {})

    poisoned, delete = anyio.run(main)
    assert poisoned.is_error is not True  # the result itself passes (filters taint, not block)
    decision = refusal(delete)["decision"]
    assert decision["matched_rule"] == "no_destruction_after_poison"
    assert "delete_all" not in gateway.ran_lines()
    [seen] = [r for r in gateway.records() if r.get("schema") == "refusalkit.mcp-result/v1"]
    assert seen["taint"] == ["prompt_injection"]


def test_a_new_session_starts_untainted(gateway: Gateway) -> None:
    async def poison() -> None:
        async with gateway.connect() as client:
            await client.list_tools()
            await client.call_tool("poison", {})

    async def delete() -> Any:
        async with gateway.connect() as client:
            await client.list_tools()
            return await client.call_tool("delete_all", {})

    anyio.run(poison)
    assert text(anyio.run(delete)) == "deleted everything"


def test_resources_are_decided_listed_and_scanned(gateway: Gateway) -> None:
    async def main() -> tuple[set[str], Any, BaseException | None, Any]:
        async with gateway.connect() as client:
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            public = await client.read_resource("notes://public")
            error: BaseException | None = None
            try:
                await client.read_resource("notes://secret-token")
            except MCPError as exc:
                error = exc
            prompt = await client.get_prompt("summarize", {"topic": "pins"})
            return listed, public, error, prompt

    listed, public, error, prompt = anyio.run(main)
    assert listed == {"notes://public"}
    assert public.contents[0].text == "public note: nothing to see"
    assert isinstance(error, MCPError)
    assert str(error.error.message).startswith(
        "refused (policy-denied by secret_notes, retryable: no): Secret notes are not for agents."
    )
    assert error.error.data["io.refusalkit/decision"]["decision"]["matched_rule"] == "secret_notes"
    _no_secret_in(error.error.model_dump())
    assert "Summarize pins." in prompt.messages[0].content.text
    assert "read notes://secret-token" not in gateway.ran_lines()
    assert gateway.ran_lines() == ["read notes://public", "prompt summarize pins"]
