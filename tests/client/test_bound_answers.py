"""Answers bound to requests: a man in the middle on loopback, in front of a real ``refusalkit
serve`` (SQLite and PostgreSQL), replays or swaps genuine journaled answers
(docs/design/client.md, Answers bound to requests)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from refusalkit.client import AsyncClient, Client
from refusalkit.errors import VerificationError
from refusalkit.model import Action, Decision, ReasonCode
from support.live_service import Deployment, ServerProcess, tools_deployment
from support.mitm import Exchange, Mitm
from support.stores import store_url

__all__ = ["store_url"]

_INDEX = "refusalkit-journal-index"


def _req(tool: str) -> dict[str, object]:
    return {"tool": tool, "args": {"path": "/tmp/f"}, "caller": {"agent": "a", "session": "s"}}


@pytest.fixture
def served(tmp_path: Path, store_url: str) -> Iterator[tuple[Deployment, ServerProcess]]:
    deployment = tools_deployment(tmp_path / "svc")
    deployment.journal = store_url
    server = deployment.server(journal=store_url).start()
    yield deployment, server
    server.stop()


def _sign(server: ServerProcess, deployment: Deployment) -> None:
    url = f"{server.base_url}/v1/admin/journal/checkpoint"
    answer = httpx.post(url, headers=deployment.keys.header("admin"))
    assert answer.status_code == 200, answer.text


def _genuine_allow(client: Client) -> tuple[Decision, int]:
    """The attacker's own call: a genuine, journaled allow and its index."""
    decision = client.decide(_req("read_file"))
    assert decision.action is Action.ALLOW
    return decision, client._indices.of(decision, None)


def _replaying(answer: bytes, index: int) -> Callable[[Exchange], None]:
    def replay(exchange: Exchange) -> None:  # the service denied; the victim gets the allow
        assert orjson.loads(exchange.answer)["action"] == "deny"
        exchange.answer = answer
        assert exchange.answer_headers is not None
        exchange.answer_headers[_INDEX] = str(index)

    return replay


def _fails_closed(decision: Decision) -> None:
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "not bound to this request" in (decision.why_trail[-1].detail or "")


def _client(url: str, deployment: Deployment) -> Client:
    key = deployment.keyring.public_key_bytes()
    return Client(url, api_key=deployment.keys.all, public_key=key, retries=0)


def test_a_replayed_allow_is_refused_and_does_not_verify(
    served: tuple[Deployment, ServerProcess],
) -> None:
    deployment, server = served
    with _client(server.base_url, deployment) as attacker, Mitm(server.base_url) as mitm:
        allowed, index = _genuine_allow(attacker)
        mitm.on_answer = _replaying(orjson.dumps(allowed.to_dict()), index)
        with _client(mitm.url, deployment) as victim:
            _fails_closed(victim.decide(_req("delete_file")))
            _sign(server, deployment)
            assert attacker.verify_inclusion(allowed).index == index  # genuine, for its request
            for forged in (
                dataclasses.replace(allowed, client_request_id="hmac-sha256:" + "0" * 64),
                dataclasses.replace(allowed, request_digest="hmac-sha256:k1:" + "0" * 64),
            ):
                with pytest.raises(VerificationError, match=r"not bound|another request digest"):
                    attacker.verify_inclusion(forged, index=index)
            with pytest.raises(VerificationError, match="not an answer this client received"):
                victim.verify_inclusion(allowed, index=index)
    [exchange] = mitm.seen
    assert orjson.loads(exchange.body)["tool"] == "delete_file"  # the service saw the real call


def test_a_request_swapped_under_the_victims_id_is_refused(
    served: tuple[Deployment, ServerProcess],
) -> None:
    """The request id alone is not enough: the binding covers the body the service decided."""
    deployment, server = served

    def swap(exchange: Exchange) -> None:  # the victim's id, another request
        other = _req("read_file")
        single = exchange.path == "/v1/decide"
        exchange.body = orjson.dumps(other if single else {"requests": [other]})

    with Mitm(server.base_url) as mitm, _client(mitm.url, deployment) as victim:
        mitm.on_request = swap
        _fails_closed(victim.decide(_req("delete_file")))
        [batch] = victim.decide_batch([_req("delete_file")])
    _fails_closed(batch)
    assert all(e.status == 200 for e in mitm.seen)


def test_batch_answers_replayed_or_reordered_are_refused(
    served: tuple[Deployment, ServerProcess],
) -> None:
    deployment, server = served
    with Mitm(server.base_url) as mitm, _client(mitm.url, deployment) as victim:
        good = victim.decide_batch([_req("read_file"), _req("delete_file")])
        assert [d.action for d in good] == [Action.ALLOW, Action.DENY]
        first = mitm.seen[0].answer

        def reorder(exchange: Exchange) -> None:
            data = orjson.loads(exchange.answer)
            data["decisions"].reverse()
            exchange.answer = orjson.dumps(data)

        mitm.on_answer = reorder
        swapped = victim.decide_batch([_req("read_file"), _req("delete_file")])
        mitm.on_answer = lambda exchange: setattr(exchange, "answer", first)
        replayed = victim.decide_batch([_req("delete_file"), _req("read_file")])
    for decision in (*swapped, *replayed):
        _fails_closed(decision)


def test_the_async_client_refuses_a_replayed_allow(
    served: tuple[Deployment, ServerProcess],
) -> None:
    deployment, server = served
    key = deployment.keyring.public_key_bytes()

    async def run(url: str) -> None:
        async with AsyncClient(
            url, api_key=deployment.keys.all, public_key=key, retries=0
        ) as victim:
            _fails_closed(await victim.decide(_req("delete_file")))
            [batch] = await victim.decide_batch([_req("delete_file")])
            _fails_closed(batch)
            with pytest.raises(VerificationError, match="not an answer this client received"):
                await victim.verify_inclusion(allowed, index=index)

    with _client(server.base_url, deployment) as attacker, Mitm(server.base_url) as mitm:
        allowed, index = _genuine_allow(attacker)
        one = orjson.dumps(allowed.to_dict())

        def replay(exchange: Exchange) -> None:
            single = exchange.path == "/v1/decide"
            exchange.answer = one if single else b'{"decisions":[%s],"indices":[%d]}' % (one, index)

        mitm.on_answer = replay
        _sign(server, deployment)
        asyncio.run(run(mitm.url))
