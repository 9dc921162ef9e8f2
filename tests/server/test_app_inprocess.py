"""The app in-process (Starlette test client): configuration, OpenAPI, typed errors, insecure mode.

The behaviour over real HTTP is tested against ``refusalkit serve`` in test_live.py; these cover
what needs no socket.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import Receive, Scope, Send
from svc_helpers import Deployment, allowed_request, denied_request

from refusalkit.errors import ServiceError
from refusalkit.server import ServiceConfig, create_app

EXPECTED_PATHS = {
    "/v1/decide",
    "/v1/decide/batch",
    "/v1/journal/checkpoint",
    "/v1/journal/entries",
    "/v1/journal/proof/inclusion",
    "/v1/journal/proof/consistency",
    "/v1/journal/receipt",
    "/v1/journal/tlog/checkpoint",
    "/v1/journal/tlog/tile/{path}",
    "/v1/stats",
    "/v1/decisions",
    "/healthz",
    "/readyz",
    "/metrics",
    "/v1/admin/reload",
    "/v1/admin/journal/checkpoint",
    "/v1/approvals",
    "/v1/approvals/{request_id}/grant",
    "/v1/approvals/{request_id}/deny",
}


def _config(deployment: Deployment, **changes: object) -> ServiceConfig:
    base = ServiceConfig(
        policy=deployment.pack,
        journal=deployment.journal,
        keys_file=deployment.keys.path,
        keyring=deployment.keyring_path,
    )
    return ServiceConfig(**{**{f: getattr(base, f) for f in base.__slots__}, **changes})


def test_no_keys_file_is_refused_unless_insecure(deployment: Deployment) -> None:
    with pytest.raises(ServiceError, match="no keys file"):
        create_app(_config(deployment, keys_file=None))
    with pytest.raises(ServiceError, match="does not exist"):
        create_app(_config(deployment, keys_file=deployment.root / "missing.json"))


def test_insecure_mode_lets_every_caller_do_everything(deployment: Deployment) -> None:
    app = create_app(_config(deployment, keys_file=None, insecure_no_auth=True))
    with TestClient(app) as client:
        assert client.post("/v1/decide", json=denied_request()).json()["action"] == "deny"
        assert client.get("/v1/stats").json()["total"] == 1
        page = client.get("/ui")
        assert page.status_code == 200
        assert "--insecure-no-auth" in page.text


def test_openapi_publishes_every_endpoint_with_bearer_security(deployment: Deployment) -> None:
    with TestClient(create_app(_config(deployment))) as client:
        assert client.get("/openapi.json").status_code == 401
        doc = client.get("/openapi.json", headers=deployment.keys.header("decide")).json()
    assert set(doc["paths"]) == EXPECTED_PATHS
    assert doc["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    decide = doc["paths"]["/v1/decide"]["post"]
    assert decide["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "DecideRequestModel"
    )
    assert {"200", "401", "403", "413", "503"} <= set(decide["responses"])
    assert "DecisionModel" in doc["components"]["schemas"]


def test_unknown_paths_and_methods_are_typed_errors(deployment: Deployment) -> None:
    with TestClient(create_app(_config(deployment))) as client:
        missing = client.get("/v1/nothing", headers=deployment.keys.header("read"))
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not-found"
        wrong = client.delete("/v1/stats", headers=deployment.keys.header("read"))
        assert wrong.status_code == 405
        assert wrong.json()["error"]["code"] == "method-not-allowed"


def test_the_body_limit_is_the_configured_one(deployment: Deployment) -> None:
    with TestClient(create_app(_config(deployment, max_body_bytes=2048, max_batch=3))) as client:
        headers = deployment.keys.header("decide")
        ok = client.post("/v1/decide", json=allowed_request(), headers=headers)
        assert ok.status_code == 200
        big = dict(allowed_request(), input="x" * 3000)
        assert client.post("/v1/decide", json=big, headers=headers).status_code == 413
        four = {"requests": [allowed_request(i) for i in range(4)]}
        answer = client.post("/v1/decide/batch", json=four, headers=headers)
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "batch-too-large"


def test_the_fast_path_and_the_fastapi_route_answer_alike(deployment: Deployment) -> None:
    app = create_app(_config(deployment))

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        await FastAPI.__call__(app, scope, receive, send)  # the FastAPI routes, no front layers

    headers = deployment.keys.header("decide")
    with TestClient(app) as client:
        fast = client.post("/v1/decide", json=denied_request(), headers=headers)
        slow = TestClient(routed).post("/v1/decide", json=denied_request(), headers=headers)
        fast_batch = client.post(
            "/v1/decide/batch", json={"requests": [allowed_request()]}, headers=headers
        )
        slow_batch = TestClient(routed).post(
            "/v1/decide/batch", json={"requests": [allowed_request()]}, headers=headers
        )
        slow_denied = TestClient(routed).post("/v1/decide", json={}, headers={})
    for a, b in ((fast, slow), (fast_batch, slow_batch)):
        assert a.status_code == b.status_code == 200
        assert a.headers["content-type"] == b.headers["content-type"] == "application/json"
    assert [int(r.headers["refusalkit-journal-index"]) for r in (fast, slow)] == [0, 1]
    strip = ("decision_id", "decided_at")
    assert {k: v for k, v in fast.json().items() if k not in strip} == {
        k: v for k, v in slow.json().items() if k not in strip
    }
    assert fast_batch.json()["indices"] == [2]
    assert slow_batch.json()["indices"] == [3]
    assert slow_denied.status_code == 401


paths = st.one_of(st.none(), st.just(Path("/tmp/x.yaml")), st.just(Path("relative/k.json")))


@settings(max_examples=50, deadline=None)
@given(
    keys_file=paths,
    keyring=paths,
    insecure=st.booleans(),
    max_body=st.integers(1024, 10**9),
    max_batch=st.integers(1, 10**6),
    origin=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
)
def test_config_round_trips_through_json(
    keys_file: Path | None,
    keyring: Path | None,
    insecure: bool,
    max_body: int,
    max_batch: int,
    origin: str | None,
) -> None:
    config = ServiceConfig(
        policy=Path("p.yaml"),
        journal="postgresql://db/j",
        keys_file=keys_file,
        keyring=keyring,
        insecure_no_auth=insecure,
        max_body_bytes=max_body,
        max_batch=max_batch,
        origin=origin,
    )
    assert ServiceConfig.from_json(config.to_json()) == config


class _Unencodable:
    """An encoder that fails, standing for a decision with no RFC 8785 form."""

    def encode(self, decision: object) -> bytes:
        raise ValueError(f"no RFC 8785 form for {type(decision).__name__}")


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/decide", denied_request()), ("/v1/decide/batch", {"requests": [allowed_request()]})],
)
def test_a_decision_that_cannot_be_encoded_fails_closed(
    deployment: Deployment, path: str, body: object
) -> None:
    """No answer without its journal entry: a typed 503, and nothing is journaled."""
    app = create_app(_config(deployment))
    with TestClient(app) as client:
        app.state.service.encoder = _Unencodable()
        answer = client.post(path, json=body, headers=deployment.keys.header("decide"))
        stats = client.get("/v1/stats", headers=deployment.keys.header("read")).json()
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "journal-unavailable"
    assert "not in force" in answer.json()["error"]["message"]
    assert stats["total"] == 0


def test_both_ways_in_authenticate_alike(deployment: Deployment) -> None:
    """One decide path (``decide_call``): the fast path and the FastAPI routes read the header
    with one parser and check one scope, so every header gets the same answer from both."""
    app = create_app(_config(deployment))

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        await FastAPI.__call__(app, scope, receive, send)

    keys = deployment.keys
    headers = [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": f"Basic {keys.decide}"},
        {"Authorization": f"Bearer {keys.read}"},  # valid key, wrong scope
        {"Authorization": f"bearer {keys.decide}"},  # the scheme is case-insensitive
        {"Authorization": f"Bearer  {keys.decide} "},  # blanks around the key
        {"Authorization": "Bearer rk_not_a_key"},
    ]
    answers = []
    with TestClient(app) as client:
        for header in headers:
            for path, body in (
                ("/v1/decide", denied_request()),
                ("/v1/decide/batch", {"requests": []}),
            ):
                fast = client.post(path, json=body, headers=header)
                slow = TestClient(routed).post(path, json=body, headers=header)
                code = fast.json()["error"]["code"] if fast.status_code != 200 else None
                slow_code = slow.json()["error"]["code"] if slow.status_code != 200 else None
                assert (fast.status_code, code) == (slow.status_code, slow_code), (header, path)
                answers.append(fast.status_code)
    assert answers == [401] * 8 + [403] * 2 + [200] * 4 + [401] * 2


def _binding(request_id: str, body: bytes, place: bytes) -> str:
    """docs/design/client.md, Answers bound to requests, computed here from the page."""
    message = hashlib.sha256(body).digest() + b"\n" + place
    return "hmac-sha256:" + hmac.new(bytes.fromhex(request_id), message, "sha256").hexdigest()


def test_both_ways_in_bind_decisions_to_the_callers_request_id(deployment: Deployment) -> None:
    """``Refusalkit-Request-Id``: each journaled decision carries the binding of the id to the
    body and its place; a malformed id is a 422 on both paths; no id, no field."""
    app = create_app(_config(deployment))

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        await FastAPI.__call__(app, scope, receive, send)

    one = orjson.dumps(denied_request())
    batch = orjson.dumps({"requests": [allowed_request(), denied_request()]})
    rid = "0f" * 16
    auth = deployment.keys.header("decide")
    with TestClient(app) as fast:
        for client in (fast, TestClient(routed)):
            headers = {**auth, "Refusalkit-Request-Id": rid}
            answer = client.post("/v1/decide", content=one, headers=headers)
            assert answer.json()["client_request_id"] == _binding(rid, one, b"decide")
            index = int(answer.headers["refusalkit-journal-index"])
            entry = client.get(
                "/v1/journal/entries",
                params={"start": index, "end": index + 1},
                headers=deployment.keys.header("read"),
            ).json()["entries"][0]
            assert base64.b64decode(entry["entry_b64"]) == answer.content  # bound in the leaf
            got = client.post("/v1/decide/batch", content=batch, headers=headers).json()
            assert [d["client_request_id"] for d in got["decisions"]] == [
                _binding(rid, batch, b"batch/0"),
                _binding(rid, batch, b"batch/1"),
            ]
            assert (
                "client_request_id"
                not in client.post("/v1/decide", content=one, headers=auth).json()
            )
            for bad in ("0F" * 16, "0f" * 15, "0f" * 16 + "0", "x" * 32, "0f" * 65):
                bad_headers = {**auth, "Refusalkit-Request-Id": bad}
                refused = client.post("/v1/decide", content=one, headers=bad_headers)
                assert refused.status_code == 422, bad
                assert refused.json()["error"]["code"] == "invalid-request"


_HEX = "0123456789abcdef"


def test_a_request_id_is_taken_exactly_when_it_is_32_to_128_even_hex(
    deployment: Deployment,
) -> None:
    """The header's parser, through the service: 200 with a binding for an id of 32 to 128
    lowercase hex digits (an even count), 422 for anything else."""
    body = orjson.dumps(denied_request())
    with TestClient(create_app(_config(deployment))) as client:

        @settings(max_examples=80, deadline=None)
        @given(
            st.one_of(
                st.text(alphabet=_HEX, min_size=28, max_size=132),
                st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40),
            )
        )
        def check(text: str) -> None:
            valid = all(c in _HEX for c in text) and 32 <= len(text) <= 128 and len(text) % 2 == 0
            headers = {**deployment.keys.header("decide"), "Refusalkit-Request-Id": text}
            answer = client.post("/v1/decide", content=body, headers=headers)
            assert answer.status_code == (200 if valid else 422), text
            if valid:
                assert answer.json()["client_request_id"].startswith("hmac-sha256:")

        check()


async def _cut_short(app: Any, path: str, body: bytes, headers: dict[str, str]) -> list[Any]:
    """POST ``body`` to ``path`` as a first chunk with more to come, then the client goes;
    what the app sent back."""
    listed = [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    declared = str(len(body) + 16).encode()  # the part that never comes
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080),
        "headers": [(b"content-type", b"application/json"), (b"content-length", declared),
                    *listed],
    }  # fmt: skip
    chunks = [{"type": "http.request", "body": body, "more_body": True}]
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop() if chunks else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_a_body_cut_short_is_neither_decided_nor_journaled(deployment: Deployment) -> None:
    """A client that goes before its body's last chunk has not sent a request: even when what
    came is whole JSON, no route decides, journals or answers it."""
    app = create_app(_config(deployment))
    decide = deployment.keys.header("decide")
    single = orjson.dumps(denied_request())
    batch = orjson.dumps({"requests": [denied_request(1), allowed_request(2)]})
    with TestClient(app) as client:
        for path, body in (("/v1/decide", single), ("/v1/decide/batch", batch)):
            assert client.portal.call(_cut_short, app, path, body, decide) == [], path
        admin = deployment.keys.header("admin")  # a FastAPI route, behind the body bound alone
        assert client.portal.call(_cut_short, app, "/v1/admin/reload", b"{}", admin) == []
        stats = client.get("/v1/stats", headers=deployment.keys.header("read")).json()
        assert stats["total"] == 0
        whole = client.post("/v1/decide", content=single, headers=decide)
        assert int(whole.headers["refusalkit-journal-index"]) == 0
