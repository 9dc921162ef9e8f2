"""``refusalkit mcp proxy`` on 127.0.0.1 between a real SDK client and the Python upstream over
Streamable HTTP: the same checks as over stdio, plus authentication as the service does it, and
refusals that are HTTP 200 answers with ``isError``, never 4xx.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult

from refusalkit.decide import mint_token, public_key_from_seed
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json
from refusalkit.server import KeyStore, Scope
from support.mcp_helpers import (
    PACK,
    REFUSALKIT,
    free_port,
    journal_records,
    python_upstream_http,
    refusal,
    running,
    text,
)

pytestmark = pytest.mark.timeout(180)


@dataclass(frozen=True)
class Proxy:
    url: str
    journal: Path
    keyring: Keyring
    keyring_path: Path
    keys: dict[str, str]


def _proxy_args(upstream: int, port: int, journal: Path, ring: Path, *extra: str) -> list[str]:
    return [
        REFUSALKIT, "mcp", "proxy", "--upstream", f"http://127.0.0.1:{upstream}/mcp",
        "--policy", str(PACK), "--journal", str(journal), "--keyring", str(ring),
        "--server-name", "py", "--host", "127.0.0.1", "--port", str(port), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def upstream_port() -> Iterator[int]:
    port = free_port()
    with running(python_upstream_http(port), port):
        yield port


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, upstream_port: int) -> Iterator[Proxy]:
    home = tmp_path_factory.mktemp("proxy")
    ring = Keyring.generate()
    ring_path = ring.save(home / "keyring.json")
    store = KeyStore(home / "keys.json")
    keys = {
        "tester": store.add("tester", [Scope.DECIDE])[1],
        "other": store.add("other", [Scope.DECIDE])[1],
        "auditor": store.add("auditor", [Scope.READ])[1],
    }
    journal = home / "journal.db"
    port = free_port()
    args = _proxy_args(upstream_port, port, journal, ring_path, "--keys-file", str(store.path))
    with running(args, port):
        yield Proxy(f"http://127.0.0.1:{port}/mcp", journal, ring, ring_path, keys)


def _client(url: str, key: str | None, **kw: Any) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(url, http_client=http), **kw)


def test_allowed_call_is_forwarded(proxy: Proxy) -> None:
    async def main() -> Any:
        async with _client(proxy.url, proxy.keys["tester"]) as client:
            return await client.call_tool("echo", {"text": "over http"})

    assert text(anyio.run(main)) == "over http"


def test_refusal_carries_the_journaled_decision(proxy: Proxy) -> None:
    async def main() -> Any:
        async with _client(proxy.url, proxy.keys["tester"]) as client:
            await client.list_tools()
            return await client.call_tool("read_file", {"path": "/srv/.env"})

    result = anyio.run(main)
    assert text(result).startswith("refused (policy-denied by sensitive_path, retryable: no)")
    meta = refusal(result)
    decision = meta["decision"]
    assert decision["subject"]["agent"] == "tester"  # the key's name
    records = journal_records(str(proxy.journal), proxy.keyring)
    assert canonical_json(records[meta["journal_index"]]) == canonical_json(decision)
    verify = subprocess.run(
        [REFUSALKIT, "journal", "verify", str(proxy.journal), "--keyring", str(proxy.keyring_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr


def test_tools_list_is_filtered_by_the_keys_agent(proxy: Proxy) -> None:
    async def names(key: str) -> set[str]:
        async with _client(proxy.url, key) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert "admin_reset" not in anyio.run(names, proxy.keys["tester"])
    assert anyio.run(names, proxy.keys["other"]) == set()  # "other" is granted nothing


def test_block_refuses_later_calls_of_the_session_only(proxy: Proxy) -> None:
    async def main() -> list[Any]:
        async with _client(proxy.url, proxy.keys["tester"]) as client:
            first = await client.call_tool("run", {"command": "rm -rf /"})
            later = await client.call_tool("echo", {"text": "hi"})
        async with _client(proxy.url, proxy.keys["tester"]) as client:
            fresh = await client.call_tool("echo", {"text": "new session"})
        return [first, later, fresh]

    first, later, fresh = anyio.run(main)
    assert refusal(first)["decision"]["action"] == "block"
    assert refusal(later)["decision"]["matched_rule"] == "destructive_shell"
    assert text(fresh) == "new session"


def test_progress_logs_and_cancellation_pass_through(proxy: Proxy, tmp_path: Path) -> None:
    progress: list[float] = []
    logs: list[Any] = []
    marker = tmp_path / "cancelled.txt"

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def main() -> Any:
        async with _client(proxy.url, proxy.keys["tester"], logging_callback=on_log) as client:
            result = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            with anyio.move_on_after(1.0):
                await client.call_tool("hang", {"marker": str(marker)})
            for _ in range(100):
                if marker.exists():
                    break
                await anyio.sleep(0.05)
            return result

    assert text(anyio.run(main)) == "done after 3 steps"
    assert progress == [1, 2, 3]
    assert logs == ["step 1", "step 2", "step 3"]
    assert marker.read_text() == "cancelled"


def _post(client: httpx.Client, url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return client.post(url, content=json.dumps(body), headers={**accept, **headers})


def _raw_session(client: httpx.Client, url: str, key: str) -> dict[str, str]:
    """Open a session by hand; the headers every later request of it carries."""
    auth = {"Authorization": f"Bearer {key}"}
    init = _post(client, url, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}},
    }, **auth)  # fmt: skip
    assert init.status_code == 200, init.text
    session = {**auth, "Mcp-Session-Id": init.headers["mcp-session-id"],
               "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(client, url, done, **session).status_code == 202
    return session


def test_a_refusal_is_http_200_with_is_error(proxy: Proxy) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "/srv/.env"}}}  # fmt: skip
    with httpx.Client(timeout=30) as client:
        session = _raw_session(client, proxy.url, proxy.keys["tester"])
        answer = _post(client, proxy.url, call, **session)
    assert answer.status_code == 200
    data = next(line[5:] for line in answer.text.splitlines() if line.startswith("data:"))
    message = json.loads(data)
    assert message["id"] == 2
    assert "error" not in message  # a result, not a JSON-RPC error
    assert message["result"]["isError"] is True
    assert message["result"]["_meta"]["io.refusalkit/decision"]["decision"]["action"] == "deny"


@pytest.mark.parametrize(
    ("key", "code"),
    [(None, "unauthenticated"), ("rk_not-a-key", "unauthenticated"), ("auditor", "forbidden")],
)
def test_a_refused_key_gets_a_plain_error_and_no_oauth_challenge(
    proxy: Proxy, key: str | None, code: str
) -> None:
    """403 with a JSON-RPC error body and no ``WWW-Authenticate``: MCP clients start OAuth
    discovery on a 401 (or a challenge), and would never show refusalkit's hint."""
    presented = proxy.keys.get(key, key) if key else None
    headers = {"Authorization": f"Bearer {presented}"} if presented else {}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    with httpx.Client(timeout=30) as client:
        answer = _post(client, proxy.url, init, **headers)
    assert answer.status_code == 403
    assert "www-authenticate" not in answer.headers
    body = answer.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["message"].startswith("refusalkit: ")
    assert body["error"]["data"]["error"]["code"] == code


def test_the_sdk_client_shows_refusalkits_message_for_a_wrong_key(proxy: Proxy) -> None:
    async def main() -> BaseException | None:
        try:
            async with _client(proxy.url, "rk_not-a-key") as client:
                await client.list_tools()
        except Exception as exc:
            return exc
        return None

    error = anyio.run(main)
    assert error is not None
    assert "refusalkit: the API key is not known" in repr(error)


def test_a_session_answers_only_the_key_that_opened_it(proxy: Proxy) -> None:
    with httpx.Client(timeout=30) as client:
        session = _raw_session(client, proxy.url, proxy.keys["tester"])
        hijack = {**session, "Authorization": f"Bearer {proxy.keys['other']}"}
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        assert _post(client, proxy.url, call, **hijack).status_code == 404
        assert _post(client, proxy.url, call, **session).status_code == 200


def test_shadow_proxy_forwards_and_journals(
    upstream_port: int, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    journal = tmp_path / "j.db"
    port = free_port()
    args = _proxy_args(
        upstream_port, port, journal, keyring_path, "--insecure-no-auth", "--agent", "tester",
        "--shadow",
    )  # fmt: skip

    async def main() -> Any:
        async with _client(f"http://127.0.0.1:{port}/mcp", None) as client:
            return await client.call_tool("read_file", {"path": "/srv/.env"})

    with running(args, port):
        result = anyio.run(main)
    assert text(result) == "contents of /srv/.env"
    [record] = journal_records(str(journal), keyring)
    assert record["action"] == "deny"
    assert record["why_trail"][-1]["rule"] == "@shadow"


def test_server_requests_pass_through(proxy: Proxy) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"ok": False})

    async def main() -> Any:
        async with _client(proxy.url, proxy.keys["tester"], elicitation_callback=on_elicit) as c:
            return await c.call_tool("confirm", {"question": "Deploy?"})

    assert text(anyio.run(main)) == "answered ok=False"
    assert asked == ["Deploy?"]


def test_attestation_rides_in_its_header(
    upstream_port: int, tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    seed = bytes(range(32))
    public = base64.b64encode(public_key_from_seed(seed)).decode()
    pack = tmp_path / "attested.yaml"
    pack.write_text(
        "policy: attested\nversion: v1\ndefault: allow\n"
        f"attestation: {{trusted_keys: {{k1: '{public}'}}}}\nrules: []\n"
    )
    port = free_port()
    args = _proxy_args(
        upstream_port, port, tmp_path / "j.db", keyring_path, "--insecure-no-auth",
        "--agent", "tester",
    )  # fmt: skip
    args[args.index(str(PACK))] = str(pack)
    url = f"http://127.0.0.1:{port}/mcp"

    async def call(headers: dict[str, str]) -> Any:
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return await client.call_tool("echo", {"text": "attested"})

    good = mint_token(seed, "k1", "tester", time.time() + 600)
    forged = mint_token(bytes(32), "k1", "tester", time.time() + 600)
    with running(args, port):
        ok = anyio.run(call, {"Refusalkit-Attestation": good})
        bad = anyio.run(call, {"Refusalkit-Attestation": forged})
        none = anyio.run(call, {})
    assert text(ok) == "attested"
    for result in (bad, none):
        assert text(result).startswith(
            "refused (attestation-failed by @attestation, retryable: yes)"
        )


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Host": "attacker.example"}, 421), ({"Origin": "http://attacker.example"}, 403)],
)
def test_dns_rebinding_is_refused(proxy: Proxy, headers: dict[str, str], status: int) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}  # fmt: skip
    auth = {"Authorization": f"Bearer {proxy.keys['tester']}"}
    with httpx.Client(timeout=30) as client:
        assert _post(client, proxy.url, init, **auth).status_code == 200  # loopback: fine
        assert _post(client, proxy.url, init, **auth, **headers).status_code == status


def test_an_oversized_body_is_refused(proxy: Proxy) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x" * 5_000_000}}
    with httpx.Client(timeout=30) as client:
        answer = _post(client, proxy.url, call, Authorization=f"Bearer {proxy.keys['tester']}")
    assert answer.status_code == 413


def test_the_proxy_authenticates_upstream_with_its_own_token(
    tmp_path: Path, keyring_path: Path
) -> None:
    up, port = free_port(), free_port()
    env = {**os.environ, "UPSTREAM_TOKEN": "up-secret", "PROXY_UPSTREAM_TOKEN": "up-secret"}
    args = _proxy_args(
        up, port, tmp_path / "j.db", keyring_path, "--insecure-no-auth", "--agent", "tester",
        "--upstream-token-env", "PROXY_UPSTREAM_TOKEN",
    )  # fmt: skip

    async def main() -> Any:
        async with _client(f"http://127.0.0.1:{port}/mcp", None) as client:
            return await client.call_tool("echo", {"text": "through an authenticated upstream"})

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    with running(python_upstream_http(up), up, env=env), running(args, port, env=env):
        assert text(anyio.run(main)) == "through an authenticated upstream"
        with httpx.Client(timeout=30) as client:  # and the upstream does check it
            assert _post(client, f"http://127.0.0.1:{up}/mcp", init).status_code == 401
