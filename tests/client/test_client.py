"""``Client`` and ``AsyncClient`` against a real ``refusalkit serve`` on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys

import httpx
import pytest

from refusalkit.client import AsyncClient, Client
from refusalkit.enforce import Enforcer
from refusalkit.errors import UsageError, VerificationError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode
from support.live_service import Deployment, ServerProcess


def _req(tool: str, i: int = 0) -> dict[str, object]:
    return {"tool": tool, "args": {"path": f"/tmp/f{i}"}, "caller": {"agent": "a", "session": "s"}}


def _sign(live: ServerProcess, deployment: Deployment) -> None:
    """The operator signs a checkpoint now (reading never signs; the service's own schedule
    would, within ``--checkpoint-every``), so receipts of what was just decided can be had."""
    answer = httpx.post(
        f"{live.base_url}/v1/admin/journal/checkpoint", headers=deployment.keys.header("admin")
    )
    assert answer.status_code == 200, answer.text


def _client(live: ServerProcess, deployment: Deployment, **kw: object) -> Client:
    return Client(
        live.base_url,
        api_key=deployment.keys.all,
        public_key=deployment.keyring.public_key_bytes(),
        **kw,
    )


def test_decides_each_action_and_is_an_enforcer(
    live: ServerProcess, deployment: Deployment
) -> None:
    with _client(live, deployment) as client:
        assert isinstance(client, Enforcer)
        got = {t: client.decide(_req(t)) for t in ("read_file", "send_email", "delete_file")}
    assert got["read_file"].action is Action.ALLOW
    assert got["send_email"].action is Action.AUDIT
    assert got["delete_file"].action is Action.DENY
    assert got["delete_file"].reason_code is ReasonCode.POLICY_DENIED
    assert got["delete_file"].matched_rule == "no_deletes"


def test_batch_keeps_order_across_chunks(live: ServerProcess, deployment: Deployment) -> None:
    tools = ["read_file", "delete_file", "wipe_disk"] * 9
    with _client(live, deployment, batch_size=4) as client:
        decisions = client.decide_batch([_req(t, i) for i, t in enumerate(tools)])
    expected = {"read_file": Action.ALLOW, "delete_file": Action.DENY, "wipe_disk": Action.BLOCK}
    assert [d.action for d in decisions] == [expected[t] for t in tools]


def test_inclusion_is_checked_offline_against_the_pinned_key(
    live: ServerProcess, deployment: Deployment
) -> None:
    with _client(live, deployment) as client:
        one = client.decide(_req("delete_file"))
        [two] = client.decide_batch([_req("read_file")])
        _sign(live, deployment)
        for decision in (one, two):
            receipt = client.verify_inclusion(decision)
            assert receipt.tree_size > receipt.index
        assert client.checkpoint().size >= 2


def test_a_decision_altered_after_the_service_answered_does_not_verify(
    live: ServerProcess, deployment: Deployment
) -> None:
    """A proxy that flips deny to allow on the way is caught: the entry is not in the log."""
    with _client(live, deployment) as client:
        denied = client.decide(_req("delete_file"))
        _sign(live, deployment)
        index = client._indices.of(denied, None)
        forged = dataclasses.replace(denied, action=Action.AUDIT, reason_code=None)
        with pytest.raises(VerificationError, match="leaf hash"):
            client.verify_inclusion(forged, index=index)


def test_a_log_signed_by_another_key_does_not_verify(
    live: ServerProcess, deployment: Deployment
) -> None:
    other = Keyring.generate().public_key_bytes()
    with Client(live.base_url, api_key=deployment.keys.all, public_key=other) as client:
        decision = client.decide(_req("read_file"))
        _sign(live, deployment)
        with pytest.raises(VerificationError):
            client.verify_inclusion(decision)
        with pytest.raises(VerificationError):
            client.checkpoint()


def test_proofs_need_a_pinned_key(live: ServerProcess, deployment: Deployment) -> None:
    with Client(live.base_url, api_key=deployment.keys.all) as client:
        decision = client.decide(_req("read_file"))
        with pytest.raises(UsageError, match="pinned"):
            client.verify_inclusion(decision)


def test_a_rejected_api_key_fails_closed_without_raising(live: ServerProcess) -> None:
    with Client(live.base_url, api_key="not-a-key", retries=0) as client:
        decision = client.decide(_req("read_file"))
        [batch] = client.decide_batch([_req("read_file")])
    for d in (decision, batch):
        assert d.action is Action.DENY
        assert d.reason_code is ReasonCode.UNAVAILABLE
        assert "HTTP 401 (unauthenticated)" in (d.why_trail[-1].detail or "")


def test_a_malformed_request_is_refused_and_journaled_by_the_service(
    live: ServerProcess, deployment: Deployment
) -> None:
    malformed = {"tool": 7, "caller": {"agent": "a", "session": "s"}}
    with _client(live, deployment, retries=2) as client:
        one = client.decide(malformed)
        batch = client.decide_batch([_req("read_file"), {"tool": "read_file", "args": []}])
        _sign(live, deployment)
        for decision in (one, batch[1]):
            assert decision.action is Action.DENY
            assert decision.reason_code is ReasonCode.INPUT_REJECTED
            assert decision.matched_rule == "@request"
            client.verify_inclusion(decision)  # the service's record, journaled
    assert batch[0].action is Action.ALLOW


@pytest.mark.parametrize("key", ["Bearer abc", "bearer abc", "a b", "a\nb", "clé"])
def test_an_api_key_no_bearer_header_can_carry_is_a_usage_error(key: str) -> None:
    for make in (Client, AsyncClient):
        with pytest.raises(UsageError, match="API key"):
            make("http://127.0.0.1:9", api_key=key)
        with pytest.raises(UsageError, match="API key"):
            make("http://127.0.0.1:9", read_key=key)


def test_blanks_around_the_api_key_are_dropped(live: ServerProcess, deployment: Deployment) -> None:
    with Client(live.base_url, api_key=f" {deployment.keys.all}\n", retries=0) as client:
        assert client.decide(_req("read_file")).action is Action.ALLOW


def test_async_client_decides_and_verifies(live: ServerProcess, deployment: Deployment) -> None:
    async def run() -> None:
        async with AsyncClient(
            live.base_url,
            api_key=deployment.keys.all,
            public_key=deployment.keyring.public_key_bytes(),
        ) as client:
            denied = await client.decide(_req("delete_file"))
            assert denied.action is Action.DENY
            batch = await client.decide_batch([_req("read_file"), _req("wipe_disk")])
            assert [d.action for d in batch] == [Action.ALLOW, Action.BLOCK]
            await asyncio.to_thread(_sign, live, deployment)
            await client.verify_inclusion(denied)
            await client.checkpoint()

    asyncio.run(run())


def test_journal_verify_passes_on_the_services_journal(
    live: ServerProcess, deployment: Deployment
) -> None:
    with _client(live, deployment) as client:
        client.decide(_req("delete_file"))
    cli = [sys.executable, "-c", "from refusalkit.cli import main; main()"]
    done = subprocess.run(
        [*cli, "journal", "verify", deployment.journal, "--keyring", str(deployment.keyring_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
