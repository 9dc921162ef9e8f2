"""``/v1/approvals`` on a real ``refusalkit serve``, on SQLite and PostgreSQL: who may answer,
the retry that uses a grant once, eight concurrent retries, denials and bad input."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_helpers import Deployment, ServerProcess, make_deployment

from refusalkit.examples import example_path
from refusalkit.journal import open_journal
from refusalkit.server import KeyStore, Scope
from support.stores import store_url

__all__ = ["store_url"]

pytestmark = pytest.mark.timeout(180)
PUSH = {
    "tool": "git.push",
    "args": {"ref": "refs/tags/v1.2.0", "remote": "origin"},
    "caller": {"agent": "release-bot"},
}


@dataclass
class Approvals:
    """A running service with the approvals pack, and one key per role."""

    server: ServerProcess
    deployment: Deployment
    keys: dict[str, str]

    def call(self, method: str, path: str, role: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.keys[role]}"}
        return httpx.request(method, self.server.base_url + path, headers=headers, timeout=30, **kw)

    def decide(self, request: dict[str, Any] = PUSH) -> dict[str, Any]:
        answer = self.call("POST", "/v1/decide", "agent", json=request)
        assert answer.status_code == 200, answer.text
        decision: dict[str, Any] = answer.json()
        assert int(answer.headers["Refusalkit-Journal-Index"]) >= 0
        return decision


@pytest.fixture
def approvals(
    tmp_path: Path, store_url: str, start_server: Callable[[ServerProcess], ServerProcess]
) -> Approvals:
    deployment = make_deployment(tmp_path / "deploy")
    deployment.pack.write_text(example_path("release-approvals.yaml").read_text())
    store = KeyStore(deployment.keys.path)
    keys = {}
    for name, role, scopes in (
        ("release-bot", "agent", {Scope.DECIDE}),
        ("auditor", "reader", {Scope.READ}),
        ("alice", "approver", {Scope.APPROVE}),
        ("RELEASE-BOT", "self", {Scope.APPROVE}),  # an approver key named like the agent
    ):
        _, keys[role] = store.add(name, scopes)
    server = start_server(deployment.server(journal=store_url))
    deployment.journal = store_url
    return Approvals(server, deployment, keys)


def test_who_may_list_and_answer(approvals: Approvals) -> None:
    asked = approvals.decide()
    assert (asked["action"], asked["reason_code"]) == ("deny", "approval-required")
    request_id = asked["approval"]["request_id"]
    for role in ("agent", "reader"):
        assert approvals.call("GET", "/v1/approvals", role).status_code == 403
        refused = approvals.call("POST", f"/v1/approvals/{request_id}/grant", role)
        assert refused.status_code == 403
        assert "approve" in refused.json()["error"]["message"]
    [row] = approvals.call("GET", "/v1/approvals", "approver").json()["pending"]
    assert (row["request_id"], row["tool"], row["agent"]) == (request_id, "git.push", "release-bot")
    assert row["args"]["remote"].startswith("<redacted:")
    own = approvals.call("POST", f"/v1/approvals/{request_id}/grant", "self")
    assert own.status_code == 409
    assert "cannot approve its own request" in own.json()["error"]["message"]
    assert approvals.decide()["action"] == "deny"  # nothing was granted


def test_grant_retry_once_then_replay(approvals: Approvals) -> None:
    request_id = approvals.decide()["approval"]["request_id"]
    bad = approvals.call(
        "POST", f"/v1/approvals/{request_id}/grant", "approver", json={"ttl": "soon"}
    )
    assert bad.status_code == 422
    granted = approvals.call(
        "POST", f"/v1/approvals/{request_id}/grant", "approver", json={"ttl": "5m"}
    )
    assert granted.status_code == 200, granted.text
    body = granted.json()
    assert (body["answer"], body["approver"]) == ("grant", "alice")
    assert approvals.call("GET", "/v1/approvals", "approver").json()["pending"] == []
    again = approvals.call("POST", f"/v1/approvals/{request_id}/grant", "approver")
    assert again.status_code == 409
    allowed = approvals.decide()
    assert allowed["action"] == "allow"
    assert allowed["approval"]["grant_index"] == body["journal_index"]
    assert allowed["why_trail"][-1]["rule"] == "@approval"
    replay = approvals.decide()
    assert replay["reason_code"] == "approval-required"
    assert "already used" in replay["why_trail"][-1]["detail"]
    other = approvals.decide({**PUSH, "args": {"ref": "refs/tags/v2.0.0"}})
    assert "arguments differ" in other["why_trail"][-1]["detail"]


def test_denial_and_unknown_requests(approvals: Approvals) -> None:
    request_id = approvals.decide()["approval"]["request_id"]
    denied = approvals.call(
        "POST", f"/v1/approvals/{request_id}/deny", "approver", json={"reason": "code freeze"}
    )
    assert denied.status_code == 200, denied.text
    refused = approvals.decide()
    assert "refused by alice" in refused["why_trail"][-1]["detail"]
    assert "code freeze" in refused["why_trail"][-1]["detail"]
    missing = approvals.call("POST", "/v1/approvals/0000-not-there/grant", "approver")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not-found"


def test_eight_concurrent_retries_allow_exactly_once(approvals: Approvals) -> None:
    request_id = approvals.decide()["approval"]["request_id"]
    assert (
        approvals.call("POST", f"/v1/approvals/{request_id}/grant", "approver").status_code == 200
    )
    with ThreadPoolExecutor(8) as pool:
        decisions = list(pool.map(lambda _: approvals.decide(), range(8)))
    assert sorted(d["action"] for d in decisions) == ["allow"] + ["deny"] * 7
    with open_journal(approvals.deployment.journal, approvals.deployment.keyring) as journal:
        assert len(list(journal.query(action="allow"))) == 1
        journal.verify()
