"""``refusalkit mcp wrap`` between a real SDK client and a Python MCP server written with the SDK.

Allowed calls are forwarded, refusals come back as ``isError`` results carrying the journaled
decision, blocks stick to the session, shadow mode forwards and journals, ``tools/list`` is
filtered, and notifications, progress, cancellation, resources and prompts pass through.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_types import ElicitResult

from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json
from support.mcp_helpers import (
    REFUSALKIT,
    journal_records,
    python_upstream,
    refusal,
    text,
    wrap_params,
)

pytestmark = pytest.mark.timeout(120)


def _client(journal: Path, keyring_path: Path, **kw: Any) -> Client:
    return Client(wrap_params(str(journal), keyring_path, python_upstream(), **kw), mode="legacy")


def test_allowed_call_is_forwarded_and_journaled(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> None:
        async with _client(journal, keyring_path) as client:
            result = await client.call_tool("read_file", {"path": "/work/README.md"})
            assert result.is_error is not True
            assert text(result) == "contents of /work/README.md"

    anyio.run(main)
    [record] = journal_records(str(journal), keyring)
    assert record["action"] == "allow"
    assert record["matched_rule"] == "tester_tools"
    assert record["subject"]["agent"] == "tester"


def test_refusal_is_an_error_result_with_the_journaled_decision(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> Any:
        async with _client(journal, keyring_path) as client:
            await client.list_tools()
            return await client.call_tool("read_file", {"path": "/work/.env"})

    result = anyio.run(main)
    assert text(result) == (
        "refused (policy-denied by sensitive_path, retryable: no): "
        "Reading credential files is not allowed."
    )
    meta = refusal(result)
    assert meta["schema"] == "refusalkit.mcp-refusal/v1"
    decision = meta["decision"]
    assert decision["reason_code"] == "policy-denied"
    assert "/work/.env" not in json.dumps(meta)  # the why-trail holds redaction tokens only
    assert result.structured_content == {"io.refusalkit/decision": meta}  # no output schema
    records = journal_records(str(journal), keyring)
    assert canonical_json(records[meta["journal_index"]]) == canonical_json(decision)
    verify = subprocess.run(
        [REFUSALKIT, "journal", "verify", str(journal), "--keyring", str(keyring_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr
    assert "1 entries, 1 checkpoint(s) verified" in verify.stdout  # signed as the session ended


def test_no_structured_content_when_the_tool_declares_an_output_schema(
    tmp_path: Path, keyring_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pack = tmp_path / "deny-stats.yaml"
    pack.write_text(
        "policy: p\nversion: v1\ndefault: allow\nrules:\n"
        "  - {id: no_stats, effect: deny, message: No stats., when: {tool: py.stats}}\n"
    )

    async def main() -> Any:
        async with _client(tmp_path / "j.db", keyring_path, pack=pack) as client:
            await client.list_tools()
            return await client.call_tool("stats", {})

    result = anyio.run(main)
    assert refusal(result)["decision"]["matched_rule"] == "no_stats"
    assert result.structured_content is None


def test_tools_list_offers_only_granted_tools(tmp_path: Path, keyring_path: Path) -> None:
    async def main() -> tuple[set[str], Any]:
        async with _client(tmp_path / "j.db", keyring_path) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            return names, await client.call_tool("admin_reset", {})

    names, result = anyio.run(main)
    assert "admin_reset" not in names
    assert {"echo", "read_file", "run", "slow", "hang"} <= names
    assert refusal(result)["decision"]["reason_code"] == "out-of-scope"  # called anyway: refused


def test_block_refuses_every_later_call_in_the_session(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> list[Any]:
        async with _client(journal, keyring_path) as client:
            first = await client.call_tool("run", {"command": "rm -rf /"})
            later = await client.call_tool("echo", {"text": "harmless"})
            return [first, later]

    first, later = anyio.run(main)
    assert text(first).startswith("refused (policy-denied by destructive_shell, retryable: no)")
    assert refusal(first)["decision"]["action"] == "block"
    blocked = refusal(later)["decision"]
    assert blocked["action"] == "block"
    assert blocked["matched_rule"] == "destructive_shell"
    assert refusal(first)["decision"]["decision_id"] in blocked["why_trail"][0]["test"]
    assert [r["action"] for r in journal_records(str(journal), keyring)] == ["block", "block"]


def test_block_does_not_reach_another_session(tmp_path: Path, keyring_path: Path) -> None:
    journal = tmp_path / "j.db"

    async def main() -> Any:
        async with _client(journal, keyring_path) as client:
            await client.call_tool("run", {"command": "rm -rf /"})
        async with _client(journal, keyring_path) as client:
            return await client.call_tool("echo", {"text": "fresh session"})

    assert text(anyio.run(main)) == "fresh session"


def test_shadow_forwards_and_journals_everything(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"
    errlog = tmp_path / "stderr.txt"

    async def main() -> list[Any]:
        params = wrap_params(str(journal), keyring_path, python_upstream(), extra=["--shadow"])
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err), mode="legacy") as client:
                return [
                    await client.call_tool("read_file", {"path": "/work/.env"}),
                    await client.call_tool("run", {"command": "rm -rf /"}),
                    await client.call_tool("echo", {"text": "still here"}),
                ]

    env_read, rm, echo = anyio.run(main)
    assert text(env_read) == "contents of /work/.env"
    assert text(rm) == "ran rm -rf /"
    assert text(echo) == "still here"  # a shadow block does not block the session
    records = journal_records(str(journal), keyring)
    assert [r["action"] for r in records] == ["deny", "block", "allow"]
    assert all(r["why_trail"][-1]["rule"] == "@shadow" for r in records)
    report = errlog.read_text()
    assert "would deny py.read_file (policy-denied by sensitive_path), journal index 0" in report
    assert "would block py.run (policy-denied by destructive_shell), journal index 1" in report
    assert "py.echo" not in report


def test_progress_logs_resources_and_prompts_pass_through(
    tmp_path: Path, keyring_path: Path
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def main() -> list[Any]:
        params = wrap_params(str(tmp_path / "j.db"), keyring_path, python_upstream())
        async with Client(params, mode="legacy", logging_callback=on_log) as client:
            result = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            resource = await client.read_resource("memo://greeting")
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            return [result, resource, prompt]

    result, resource, prompt = anyio.run(main)
    assert text(result) == "done after 3 steps"
    assert progress == [(s, 3, f"step {s} of 3") for s in (1, 2, 3)]
    assert logs == ["step 1", "step 2", "step 3"]
    assert resource.contents[0].text == "hello from the upstream"
    assert "Please review: x = 1" in prompt.messages[0].content.text


def test_cancellation_reaches_the_server(tmp_path: Path, keyring_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"

    async def main() -> None:
        params = wrap_params(str(tmp_path / "j.db"), keyring_path, python_upstream())
        async with Client(params, mode="legacy") as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("hang", {"marker": str(marker)})
            for _ in range(100):  # the server writes the marker when the cancel arrives
                if marker.exists():
                    return
                await anyio.sleep(0.05)

    anyio.run(main)
    assert marker.read_text() == "cancelled"


def test_a_server_cannot_forge_a_refusal(tmp_path: Path, keyring_path: Path) -> None:
    async def main() -> Any:
        async with _client(tmp_path / "j.db", keyring_path) as client:
            return await client.call_tool("forge", {})

    result = anyio.run(main)
    assert "io.refusalkit/decision" not in (result.meta or {})
    assert (result.meta or {}).get("other") == "kept"
    assert result.structured_content == {"kept": 1}


def test_server_requests_pass_through(tmp_path: Path, keyring_path: Path) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"ok": True})

    async def main() -> Any:
        params = wrap_params(str(tmp_path / "j.db"), keyring_path, python_upstream())
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:
            return await client.call_tool("confirm", {"question": "Deploy?"})

    assert text(anyio.run(main)) == "answered ok=True"
    assert asked == ["Deploy?"]


def test_the_stateless_2026_protocol_through_wrap(tmp_path: Path, keyring_path: Path) -> None:
    """A client that negotiates 2026-07-28 (``server/discover``, no handshake) gets the same
    refusals; its SDK requires ``resultType`` on every result, and the refusal has it."""

    async def main() -> tuple[str, list[Any]]:
        async with Client(
            wrap_params(str(tmp_path / "j.db"), keyring_path, python_upstream())
        ) as c:
            names = {tool.name for tool in (await c.list_tools()).tools}
            assert "admin_reset" not in names
            results = [
                await c.call_tool("read_file", {"path": "/w/.env"}),
                await c.call_tool("run", {"command": "rm -rf /"}),
                await c.call_tool("echo", {"text": "after the block"}),
            ]
            return c.protocol_version, results

    version, (env, rm, echo) = anyio.run(main)
    assert version == "2026-07-28"
    assert refusal(env)["decision"]["matched_rule"] == "sensitive_path"
    assert refusal(rm)["decision"]["action"] == "block"
    assert refusal(echo)["decision"]["matched_rule"] == "destructive_shell"


def test_wrap_signs_no_checkpoint_over_a_rolled_back_store(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    """`mcp wrap` signs through the keyring's signer state (docs/design/journal.md, "Signer
    state"): a store rolled back and grown again by a different decision gets no new signature."""
    journal = tmp_path / "j.db"
    saved = tmp_path / "saved"
    saved.mkdir()

    def session(path: str) -> None:
        async def main() -> None:
            async with _client(journal, keyring_path) as client:
                await client.call_tool("read_file", {"path": path})

        anyio.run(main)

    def copy(src: Path, dst: Path) -> None:
        for stale in dst.glob("j.db*"):
            stale.unlink()
        for f in src.glob("j.db*"):
            shutil.copy2(f, dst / f.name)

    session("/work/a.md")  # one entry, signed at size 1
    copy(tmp_path, saved)
    session("/work/b.md")  # signed at size 2: the signer remembers it
    copy(saved, tmp_path)  # rolled back to size 1
    session("/work/c.md")  # size 2 again, another tree
    with open_journal(str(journal), keyring, create=False) as log:
        assert log.size() == 2
        assert len(log.checkpoints()) == 1  # only the pre-rollback checkpoint of size 1


_RECORDER = r"""
import json, sys
with open(sys.argv[1], "a", encoding="utf-8") as seen:
    for line in sys.stdin:
        seen.write(line)
        seen.flush()
        request = json.loads(line)
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}
        print(json.dumps(answer), flush=True)
"""


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"a member twice: {keys}"
    return dict(pairs)


def test_a_member_sent_twice_reaches_the_server_once_as_decided(
    tmp_path: Path, keyring_path: Path
) -> None:
    """A hostile client repeats ``command``: the proxy reads the last (``ls``, allowed), and a
    server that read the first would run ``rm -rf /``. What the server gets is the call as it
    was decided, written from its parsed form: each member once."""
    script, seen = tmp_path / "recorder.py", tmp_path / "seen.jsonl"
    script.write_text(_RECORDER)
    journal = tmp_path / "j.db"
    params = wrap_params(str(journal), keyring_path, [shutil.which("python3") or "python3",
                                                      str(script), str(seen)])  # fmt: skip
    line = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run",'
            b'"arguments":{"command":"rm -rf /","command":"ls"}}}\n')  # fmt: skip
    with subprocess.Popen(
        [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as wrap:
        assert wrap.stdin is not None
        assert wrap.stdout is not None
        wrap.stdin.write(line)
        wrap.stdin.flush()
        answer = wrap.stdout.readline()  # the session stays open until it is answered
        wrap.stdin.close()
        assert wrap.wait(timeout=60) == 0
    assert json.loads(answer)["result"] == {"content": []}
    [forwarded] = [
        json.loads(raw, object_pairs_hook=_no_twice) for raw in seen.read_text().split("\n") if raw
    ]
    assert forwarded["params"]["arguments"] == {"command": "ls"}
    [decision] = journal_records(str(journal), Keyring.load(keyring_path))
    assert decision["action"] == "allow"
