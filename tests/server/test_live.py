"""The service over real HTTP: a ``refusalkit serve`` process on 127.0.0.1, driven with httpx.

Decide and batch, keys (401/403 with typed errors), body and batch limits (413), the journal read
back over HTTP with its proofs checked by the journal's offline verifiers, stats, queries, metrics.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest
from svc_helpers import (
    Deployment,
    ServerProcess,
    allowed_request,
    denied_request,
    out_of_scope_request,
)

from refusalkit.journal import (
    NoteVerifier,
    Receipt,
    leaf_hash,
    open_checkpoint,
    open_journal,
    verify_consistency,
    verify_inclusion,
    verify_receipt,
)
from refusalkit.model import Decision, canonical_json
from refusalkit.server import KeyStore, Scope


@pytest.fixture(scope="module")
def http(live: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=live.base_url, timeout=30)


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code
    assert body["message"]
    assert body["hint"]
    return body


def test_decide_answers_the_decision_and_journals_it(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    keys = shared_deployment.keys
    allowed = http.post("/v1/decide", json=allowed_request(), headers=keys.header("decide"))
    denied = http.post("/v1/decide", json=denied_request(), headers=keys.header("decide"))
    assert allowed.status_code == denied.status_code == 200
    a, d = Decision.from_dict(allowed.json()), Decision.from_dict(denied.json())
    assert (a.action.value, a.reason_code, a.matched_rule) == ("allow", None, "approved_workspace")
    assert (d.action.value, d.reason_code, d.matched_rule) == (
        "deny",
        "policy-denied",
        "sensitive_path",
    )
    assert "SECRET" not in denied.text
    assert "/workspace/p0/.env" not in denied.text
    entries = http.get(
        "/v1/journal/entries",
        params={
            "start": denied.headers["Refusalkit-Journal-Index"],
            "end": int(denied.headers["Refusalkit-Journal-Index"]) + 1,
        },
        headers=keys.header("read"),
    ).json()["entries"]
    assert entries[0]["record"] == denied.json()
    assert base64.b64decode(entries[0]["entry_b64"]) == denied.content  # the answer IS the entry


def test_a_malformed_request_is_decided_deny_input_rejected(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    """Malformed bytes are the caller's to fix: ``input-rejected``, not retryable, as in the CLI.
    A request that parses but cannot be encoded (a lone surrogate) still fails closed."""
    lone_surrogate = b'{"tool": "fs.read", "caller": {"agent": "\\ud800"}}'
    for body, code in (
        (b"{not json", "input-rejected"),
        (b'{"args": {}}', "input-rejected"),
        (b"[1, 2]", "input-rejected"),
        (lone_surrogate, "unavailable"),
    ):
        answer = http.post(
            "/v1/decide", content=body, headers=shared_deployment.keys.header("decide")
        )
        assert answer.status_code == 200
        assert (answer.json()["action"], answer.json()["reason_code"]) == ("deny", code)
        assert answer.json()["retryable"] is (code == "unavailable")
        assert answer.headers["Refusalkit-Journal-Index"].isdigit()  # journaled like any other


def test_batch_answers_in_order_and_journals_each(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    keys = shared_deployment.keys
    requests = [allowed_request(1), denied_request(2), out_of_scope_request(), allowed_request(3)]
    answer = http.post(
        "/v1/decide/batch", json={"requests": requests}, headers=keys.header("decide")
    )
    assert answer.status_code == 200
    body = answer.json()
    assert [d["action"] for d in body["decisions"]] == ["allow", "deny", "deny", "allow"]
    assert [d["reason_code"] for d in body["decisions"]] == [
        None,
        "policy-denied",
        "out-of-scope",
        None,
    ]
    indices = body["indices"]
    assert indices == list(range(indices[0], indices[0] + 4))
    got = http.get(
        "/v1/journal/entries",
        params={"start": indices[0], "end": indices[-1] + 1},
        headers=keys.header("read"),
    ).json()["entries"]
    assert [e["record"] for e in got] == body["decisions"]
    entry_bytes = [base64.b64decode(e["entry_b64"]) for e in got]
    assert answer.content == b'{"decisions":[%s],"indices":%s}' % (
        b",".join(entry_bytes),
        json.dumps(indices, separators=(",", ":")).encode(),
    )


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic Zm9vOmJhcg==", "Bearer"])
def test_missing_or_wrong_key_is_401(http: httpx.Client, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in (
        ("POST", "/v1/decide"),
        ("GET", "/v1/stats"),
        ("GET", "/metrics"),
        ("GET", "/readyz"),
        ("GET", "/openapi.json"),
        ("POST", "/v1/admin/reload"),
    ):
        answer = http.request(method, path, json=allowed_request(), headers=headers)
        _error(answer, 401, "unauthenticated")
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    ("header", "said"),
    [("rk_live_abc", "a bare value"), ("Basic Zm9vOmJhcg==", "the 'Basic' scheme")],
)
def test_a_key_without_bearer_is_named_as_such(http: httpx.Client, header: str, said: str) -> None:
    """A key sent without ``Bearer `` is not reported as "no API key was sent"."""
    for method, path in (("POST", "/v1/decide"), ("GET", "/v1/stats"), ("GET", "/openapi.json")):
        answer = http.request(
            method, path, json=allowed_request(), headers={"Authorization": header}
        )
        body = _error(answer, 401, "unauthenticated")
        assert f"uses {said}, not Bearer" in body["message"], body
        assert "Authorization: Bearer <key>" in body["hint"]


def test_only_healthz_is_open(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("role", "method", "path"),
    [
        ("read", "POST", "/v1/decide"),
        ("read", "POST", "/v1/decide/batch"),
        ("decide", "GET", "/v1/stats"),
        ("decide", "GET", "/v1/journal/checkpoint"),
        ("decide", "GET", "/metrics"),
        ("all", "POST", "/v1/admin/reload"),
    ],
)
def test_wrong_scope_is_403(
    http: httpx.Client, shared_deployment: Deployment, role: str, method: str, path: str
) -> None:
    answer = http.request(
        method, path, json={"requests": []}, headers=shared_deployment.keys.header(role)
    )
    _error(answer, 403, "forbidden")


def _wait_for_status(http: httpx.Client, headers: dict[str, str], status: int) -> None:
    deadline = time.monotonic() + 10
    while http.get("/v1/stats", headers=headers).status_code != status:
        assert time.monotonic() < deadline, f"still not {status}"
        time.sleep(0.1)


def test_a_revoked_key_stops_working_without_restart(
    tmp_path: Any, shared_deployment: Deployment, http: httpx.Client
) -> None:
    store = KeyStore(shared_deployment.keys.path)
    _, secret = store.add("short-lived", {Scope.READ})
    headers = {"Authorization": f"Bearer {secret}"}
    _wait_for_status(http, headers, 200)  # the service re-reads the keys file within a second
    store.revoke("short-lived")
    _wait_for_status(http, headers, 401)
    _error(http.get("/v1/stats", headers=headers), 401, "unauthenticated")


def test_body_over_the_limit_is_413(http: httpx.Client, shared_deployment: Deployment) -> None:
    big = {"tool": "fs.write", "args": {"content": "x" * 2_000_000}}
    _error(
        http.post("/v1/decide", json=big, headers=shared_deployment.keys.header("decide")),
        413,
        "payload-too-large",
    )

    def chunks() -> Any:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"x" * 65536

    answer = http.post(
        "/v1/decide", content=chunks(), headers=shared_deployment.keys.header("decide")
    )
    _error(answer, 413, "payload-too-large")


def test_batch_over_the_count_is_413(http: httpx.Client, shared_deployment: Deployment) -> None:
    requests = [allowed_request(i) for i in range(1001)]
    answer = http.post(
        "/v1/decide/batch",
        json={"requests": requests},
        headers=shared_deployment.keys.header("decide"),
    )
    _error(answer, 413, "batch-too-large")


def test_a_batch_without_requests_is_422(http: httpx.Client, shared_deployment: Deployment) -> None:
    for body in ({"items": []}, [1], {"requests": "x"}):
        answer = http.post(
            "/v1/decide/batch", json=body, headers=shared_deployment.keys.header("decide")
        )
        _error(answer, 422, "invalid-request")


def test_proofs_fetched_over_http_verify_offline(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    keys = shared_deployment.keys
    http.post(
        "/v1/decide/batch",
        json={"requests": [denied_request(i) for i in range(5)]},
        headers=keys.header("decide"),
    )
    old = http.post("/v1/admin/journal/checkpoint", headers=keys.header("admin")).json()
    http.post(
        "/v1/decide/batch",
        json={"requests": [allowed_request(i) for i in range(7)]},
        headers=keys.header("decide"),
    )
    http.post("/v1/admin/journal/checkpoint", headers=keys.header("admin"))
    new = http.get("/v1/journal/checkpoint", headers=keys.header("read")).json()
    trusted = shared_deployment.keyring.public_key_bytes()
    assert base64.b64decode(new["public_key"]) == trusted
    verifier = NoteVerifier.for_key(new["key_name"], trusted)
    old_cp = open_checkpoint(old["checkpoint"], [verifier])
    new_cp = open_checkpoint(new["checkpoint"], [verifier])
    assert new_cp.size == new["tree_size"] > old_cp.size == old["tree_size"]

    consistency = http.get(
        "/v1/journal/proof/consistency",
        params={"old": old_cp.size, "new": new_cp.size},
        headers=keys.header("read"),
    ).json()
    verify_consistency(
        old_cp.size,
        new_cp.size,
        [bytes.fromhex(h) for h in consistency["hashes"]],
        old_cp.root,
        new_cp.root,
    )

    entries = http.get(
        "/v1/journal/entries", params={"start": 0, "end": new_cp.size}, headers=keys.header("read")
    ).json()["entries"]
    assert len(entries) == new_cp.size
    for entry in entries[:: max(1, len(entries) // 8)]:
        raw = base64.b64decode(entry["entry_b64"])
        assert raw == canonical_json(entry["record"])
        proof = http.get(
            "/v1/journal/proof/inclusion",
            params={"index": entry["index"], "size": new_cp.size},
            headers=keys.header("read"),
        ).json()
        verify_inclusion(
            entry["index"],
            new_cp.size,
            leaf_hash(raw),
            [bytes.fromhex(h) for h in proof["hashes"]],
            new_cp.root,
        )
        receipt = http.get(
            "/v1/journal/receipt", params={"index": entry["index"]}, headers=keys.header("read")
        ).json()
        verify_receipt(raw, Receipt.from_dict(receipt), public_key=trusted)


def test_proofs_out_of_range_are_typed_400(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    headers = shared_deployment.keys.header("read")
    _error(
        http.get("/v1/journal/proof/inclusion", params={"index": 10**9}, headers=headers),
        400,
        "proof-unavailable",
    )
    _error(
        http.get("/v1/journal/proof/consistency", params={"old": 10**9}, headers=headers),
        400,
        "proof-unavailable",
    )
    _error(
        http.get("/v1/journal/entries", params={"start": 10**9, "end": 10**9 + 1}, headers=headers),
        400,
        "proof-unavailable",
    )


def test_stats_and_queries_agree_with_the_journal(
    http: httpx.Client, shared_deployment: Deployment
) -> None:
    headers = shared_deployment.keys.header("read")
    stats = http.get("/v1/stats", headers=headers).json()
    page = http.get(
        "/v1/decisions", params={"action": "deny", "limit": 1000}, headers=headers
    ).json()
    with open_journal(shared_deployment.journal, shared_deployment.keyring) as journal:
        expected = journal.stats()
        denies = list(journal.query(action="deny"))
    assert stats["total"] == expected["total"] > 0
    assert stats["by_action"] == expected["by_action"]
    assert stats["by_rule"] == expected["by_rule"]
    assert [item["index"] for item in page["items"]] == [i for i, _ in denies]
    assert all(item["record"]["action"] == "deny" for item in page["items"])
    rule = http.get(
        "/v1/decisions", params={"matched_rule": "sensitive_path", "limit": 2}, headers=headers
    ).json()
    assert len(rule["items"]) == 2
    assert rule["truncated"] is True
    window = http.get("/v1/stats", params={"since": "2999-01-01T00:00:00Z"}, headers=headers).json()
    assert window["total"] == 0
    recent = http.get("/v1/stats", params={"last": "1h"}, headers=headers).json()
    assert recent["total"] == stats["total"]
    _error(
        http.get("/v1/stats", params={"since": "yesterday"}, headers=headers),
        422,
        "invalid-request",
    )


def test_metrics_count_decisions(http: httpx.Client, shared_deployment: Deployment) -> None:
    keys = shared_deployment.keys
    before = http.get("/metrics", headers=keys.header("read")).text
    http.post("/v1/decide", json=out_of_scope_request(), headers=keys.header("decide"))
    after = http.get("/metrics", headers=keys.header("read")).text
    line = 'refusalkit_decisions_total{action="deny",reason_code="out-of-scope"}'

    def value(text: str) -> float:
        found = [ln for ln in text.splitlines() if ln.startswith(line)]
        return float(found[0].split()[-1]) if found else 0.0

    assert value(after) == value(before) + 1
    assert "refusalkit_decide_seconds_bucket" in after
    assert "refusalkit_journal_size" in after


def test_readyz_reports_pack_and_journal(http: httpx.Client, shared_deployment: Deployment) -> None:
    body = http.get("/readyz", headers=shared_deployment.keys.header("read")).json()
    assert body["ready"] is True
    assert body["problems"] == []
    assert body["pack"]["id"] == "service-test"
    assert body["journal_size"] > 0


def test_the_log_holds_no_request_values(live: ServerProcess) -> None:
    assert "SECRET=1" not in live.log()
    assert "/workspace/p0/.env" not in live.log()


def test_decision_log_holds_only_the_redacted_form(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    server = start_server(deployment.server("--log-decisions"))
    answer = httpx.post(
        f"{server.base_url}/v1/decide",
        json=denied_request(7),
        headers=deployment.keys.header("decide"),
        timeout=30,
    )
    decision = answer.json()
    server.stop()
    log = server.log()
    assert f"decision {decision['decision_id']} action=deny reason_code=policy-denied" in log
    assert decision["request_digest"] in log
    assert "SECRET=1" not in log
    assert "/workspace/p7/.env" not in log


@pytest.mark.postgres
def test_an_unusable_store_fails_closed(
    deployment: Deployment,
    postgres_url: str,
    postgres_admin_url: str,
    start_server: Callable[[ServerProcess], ServerProcess],
) -> None:
    server = start_server(deployment.server(journal=postgres_url))
    headers = deployment.keys.header("all")
    assert (
        httpx.post(
            f"{server.base_url}/v1/decide", json=allowed_request(), headers=headers, timeout=30
        ).status_code
        == 200
    )
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    answer = httpx.post(
        f"{server.base_url}/v1/decide", json=allowed_request(), headers=headers, timeout=60
    )
    _error(answer, 503, "journal-unavailable")
    assert "allow" not in answer.text
    ready = httpx.get(f"{server.base_url}/readyz", headers=headers, timeout=60)
    assert ready.status_code == 503
    assert ready.json()["ready"] is False
