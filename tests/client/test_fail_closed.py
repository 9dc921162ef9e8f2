"""The client never raises into a decision and never allows when the service fails it."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

from refusalkit.client import AsyncClient, Client
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.enforce import fail_closed
from refusalkit.journal import open_journal
from refusalkit.model import Action, Decision, ReasonCode
from support.live_service import Deployment, tools_deployment

REQ = {
    "tool": "read_file",
    "args": {"path": "/workspace/a"},
    "caller": {"agent": "a", "session": "s"},
}
Reply = Callable[[int], tuple[int, dict[str, str], bytes]]


def _assert_failed_closed(decision: Decision, detail: str) -> None:
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert decision.matched_rule == "@unavailable"
    assert decision.subject.agent == "a"
    assert detail in (decision.why_trail[-1].detail or "")


def test_a_stopped_service_gives_deny_unavailable(tmp_path: Path) -> None:
    deployment = tools_deployment(tmp_path)
    server = deployment.server().start()
    client = Client(server.base_url, api_key=deployment.keys.all, retries=1, backoff=0.001)
    assert client.decide(REQ).action is Action.ALLOW  # a kept-alive connection, then...
    server.stop()
    _assert_failed_closed(client.decide(REQ), "cannot be reached")
    batch = client.decide_batch([REQ, REQ])
    assert len(batch) == 2
    for decision in batch:
        _assert_failed_closed(decision, "cannot be reached")
    client.close()


def test_async_client_fails_closed_too(tmp_path: Path) -> None:
    deployment = tools_deployment(tmp_path)
    server = deployment.server()  # never started: nothing listens on its port

    async def run() -> list[Decision]:
        async with AsyncClient(server.base_url, retries=0) as client:
            return [await client.decide(REQ), *(await client.decide_batch([REQ]))]

    for decision in asyncio.run(run()):
        _assert_failed_closed(decision, "cannot be reached")


def _bound(body: bytes, request_id: str | None, sent: bytes) -> bytes:
    """``body`` with each decision in it bound to the call as the service binds it
    (docs/design/client.md, Answers bound to requests); other bodies as they are."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if request_id is None or not isinstance(data, dict):
        return body
    key, digest = bytes.fromhex(request_id), hashlib.sha256(sent).digest()

    def bind(place: bytes) -> str:
        return "hmac-sha256:" + hmac.new(key, digest + b"\n" + place, "sha256").hexdigest()

    if "decision_id" in data:
        data["client_request_id"] = bind(b"decide")
    for i, one in enumerate(data.get("decisions") or []):
        if isinstance(one, dict):
            one["client_request_id"] = bind(b"batch/%d" % i)
    return orjson.dumps(data)


class _Scripted:
    """A loopback HTTP server answering each POST with ``reply(n)`` (n counts from 0), its
    decisions bound to the call as the service binds them."""

    def __init__(self, reply: Reply) -> None:
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                sent = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, body = reply(outer.calls)
                body = _bound(body, self.headers.get("refusalkit-request-id"), sent)
                outer.calls += 1
                try:
                    self.send_response(status)
                    for name, value in {**headers, "content-length": str(len(body))}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted() -> Iterator[Callable[[Reply], _Scripted]]:
    servers: list[_Scripted] = []

    def make(reply: Reply) -> _Scripted:
        servers.append(_Scripted(reply))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def point(tmp_path: Path) -> DecisionPoint:
    deployment: Deployment = tools_deployment(tmp_path)
    return DecisionPoint(load_pack(deployment.pack), deployment.keyring)


def _body(decision: Decision) -> bytes:
    return orjson.dumps(decision.to_dict())


def test_503_is_retried_then_answered(scripted, point: DecisionPoint) -> None:
    allow = _body(point.decide(REQ))
    server = scripted(lambda n: (503, {"retry-after": "0"}, b"{}") if n < 2 else (200, {}, allow))
    with Client(server.url, retries=2, backoff=0.001) as client:
        assert client.decide(REQ).action is Action.ALLOW
    assert server.calls == 3


def test_an_unavailable_answer_is_retried_and_spent_retries_fail_closed(
    scripted, point: DecisionPoint
) -> None:
    failed = _body(fail_closed(REQ, "the service failed closed"))  # as a failing service answers
    server = scripted(lambda n: (200, {}, failed))
    with Client(server.url, retries=3, backoff=0.001) as client:
        decision = client.decide(REQ)
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert server.calls == 4


def test_a_malformed_requests_decision_is_a_decision_not_retried(
    scripted, point: DecisionPoint
) -> None:
    """The service refuses a malformed request input-rejected by @request (not retryable): the
    client returns that decision as it is, asking once."""
    rejected = point.decide({"tool": 7})
    batch = orjson.dumps({"decisions": [rejected.to_dict()], "indices": [1]})
    server = scripted(lambda n: (200, {}, _body(rejected) if n == 0 else batch))
    with Client(server.url, retries=3, backoff=0.001) as client:
        answered = client.decide({"tool": 7})
        [batched] = client.decide_batch([{"tool": 7}])
    assert dataclasses.replace(answered, client_request_id=None) == rejected
    assert rejected.reason_code is ReasonCode.INPUT_REJECTED
    assert rejected.matched_rule == "@request"
    assert batched.reason_code is ReasonCode.INPUT_REJECTED
    assert server.calls == 2


def test_a_401_is_not_retried(scripted) -> None:
    """The service answers 401 for an unknown key or a header in another scheme than Bearer."""
    error = orjson.dumps({"error": {"code": "unauthenticated", "message": "no", "hint": ""}})
    server = scripted(lambda n: (401, {"www-authenticate": "Bearer"}, error))
    with Client(server.url, api_key="k", retries=5, backoff=0.001) as client:
        _assert_failed_closed(client.decide(REQ), "HTTP 401 (unauthenticated)")
    assert server.calls == 1


def test_a_client_error_is_not_retried(scripted) -> None:
    error = orjson.dumps({"error": {"code": "forbidden", "message": "no", "hint": ""}})
    server = scripted(lambda n: (403, {}, error))
    with Client(server.url, retries=5, backoff=0.001) as client:
        _assert_failed_closed(client.decide(REQ), "HTTP 403 (forbidden)")
    assert server.calls == 1


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"schema": "refusalkit.decision/v1", "action": "allow"}',
        b'{"schema": "other/v9", "action": "allow", "decision_id": "x"}',
    ],
)
def test_an_answer_that_is_not_a_decision_is_never_an_allow(scripted, body: bytes) -> None:
    server = scripted(lambda n: (200, {}, body))
    with Client(server.url, retries=0) as client:
        _assert_failed_closed(client.decide(REQ), "not")
        [batched] = client.decide_batch([REQ])
        _assert_failed_closed(batched, "")


def test_a_batch_answer_of_the_wrong_length_fails_the_whole_batch(
    scripted, point: DecisionPoint
) -> None:
    one = point.decide(REQ).to_dict()
    body = orjson.dumps({"decisions": [one], "indices": [0]})
    server = scripted(lambda n: (200, {}, body))
    with Client(server.url, retries=0) as client:
        decisions = client.decide_batch([REQ, REQ])
    assert [d.reason_code for d in decisions] == [ReasonCode.UNAVAILABLE] * 2


def test_a_request_json_cannot_carry_fails_closed(scripted) -> None:
    server = scripted(lambda n: (500, {}, b""))
    with Client(server.url, retries=0) as client:
        decision = client.decide({"tool": "t", "args": {"x": object()}})
    _assert_failed_closed_no_agent(decision)
    assert server.calls == 0


def _assert_failed_closed_no_agent(decision: Decision) -> None:
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "not JSON" in (decision.why_trail[-1].detail or "")


def test_an_empty_batch_makes_no_call(scripted) -> None:
    server = scripted(lambda n: (500, {}, b""))
    with Client(server.url) as client:
        assert client.decide_batch([]) == []
    assert server.calls == 0


def test_a_service_slower_than_the_timeout_fails_closed(scripted, point: DecisionPoint) -> None:
    allow = _body(point.decide(REQ))

    def slow(n: int) -> tuple[int, dict[str, str], bytes]:
        time.sleep(1.0)
        return 200, {}, allow

    server = scripted(slow)
    with Client(server.url, timeout=0.2, retries=1, backoff=0.001) as client:
        _assert_failed_closed(client.decide(REQ), "cannot be reached (ReadTimeout)")


def test_decisions_made_while_the_service_is_down_go_to_the_fallback_journal(
    tmp_path: Path,
) -> None:
    deployment = tools_deployment(tmp_path)
    server = deployment.server()  # never started
    store = tmp_path / "fallback.db"
    with open_journal(store, deployment.keyring) as journal:
        with Client(server.base_url, retries=0, fallback_journal=journal) as client:
            one = client.decide(REQ)
            batch = client.decide_batch([REQ, REQ])
        ids = [r["decision_id"] for _, r in journal.query(schema="refusalkit.decision/v1")]
        assert ids == [d.decision_id for d in (one, *batch)]
        journal.checkpoint()
        assert journal.verify().size == 3


def test_any_error_inside_the_client_is_a_refusal_not_an_exception(tmp_path: Path) -> None:
    """Even a misuse (a closed client) refuses rather than raising into the agent."""
    client = Client("http://127.0.0.1:9", retries=0)
    client.close()
    _assert_failed_closed(client.decide(REQ), "the client failed (RuntimeError)")
    [batched] = client.decide_batch([REQ])
    _assert_failed_closed(batched, "the client failed (RuntimeError)")

    async def run() -> Decision:
        async with AsyncClient("http://127.0.0.1:9", retries=0) as closed:
            pass
        return await closed.decide(REQ)

    _assert_failed_closed(asyncio.run(run()), "the client failed (RuntimeError)")
