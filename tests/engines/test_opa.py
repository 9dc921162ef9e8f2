"""The OPA adapter over HTTP against a loopback server with OPA's Data API answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.engines import AdapterFailure, OpaAdapter
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode
from support.net import closed_port
from support.opa_server import PROVENANCE, OpaServer, opa_server
from support.records import refused_unencodable, valid_record

POLICY = """\
package agent
import rego.v1

default allow := false
allow if input.tool in {"fs.read", "fs.write"}
deny contains {"rule": "no-etc", "field": "args.path"} if startswith(input.args.path, "/etc/")
decision := {"allow": allow, "deny": deny, "audit": []}
conflict := 1 if input.tool
conflict := 2 if input.tool
"""


def req(tool: str = "fs.write", **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "caller": {"agent": "coder"}}


@pytest.fixture(scope="module")
def server() -> Iterator[OpaServer]:
    with opa_server({"agent.rego": POLICY}) as state:
        yield state


@pytest.fixture
def opa(server: OpaServer, keyring: Keyring) -> Iterator[OpaAdapter]:
    server.delay_s, server.status, server.body = 0.0, None, None
    adapter = OpaAdapter(server.url, keyring, query="data.agent.decision", deadline_ms=5_000)
    yield adapter
    adapter.close()


def test_a_deny_keeps_opas_decision_id_and_provenance(opa: OpaAdapter, server: OpaServer) -> None:
    decision = opa.decide(req(path="/etc/passwd"))
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.POLICY_DENIED, "no-etc",
    )  # fmt: skip
    assert server.seen[-1]["path"] == "/v1/data/agent/decision"
    assert server.seen[-1]["input"] == req(path="/etc/passwd")  # default: the whole request
    assert (decision.engine.name, decision.engine.version) == ("opa", PROVENANCE["version"])
    assert decision.policy.version == "authz@r7"
    opa_step = decision.why_trail[-1]
    assert opa_step.rule == "@opa"
    assert (opa_step.detail or "").startswith("decision_id=")
    valid_record(decision.to_dict())


def test_allow_and_default(opa: OpaAdapter) -> None:
    assert opa.decide(req(path="/workspace/a")).action is Action.ALLOW
    default = opa.decide(req(tool="net.fetch"))
    assert (default.action, default.matched_rule) == (Action.DENY, "@default")


@pytest.mark.parametrize(
    ("query", "problem"),
    [("data.agent.nothing", "undefined"), ("data.agent.conflict", "HTTP 500")],
)
def test_undefined_and_errors_are_unavailable(
    server: OpaServer, keyring: Keyring, query: str, problem: str
) -> None:
    server.delay_s, server.status, server.body = 0.0, None, None
    adapter = OpaAdapter(server.url, keyring, query=query, deadline_ms=5_000)
    decision = adapter.decide(req())
    assert (decision.reason_code, decision.matched_rule) == (ReasonCode.UNAVAILABLE, "@unavailable")
    assert problem in (decision.why_trail[-1].detail or "")
    valid_record(decision.to_dict())


@pytest.mark.parametrize(
    ("status", "body", "problem"),
    [
        (404, None, "HTTP 404"),
        (503, None, "HTTP 503"),
        (200, b"not json", "not JSON"),
        (200, b"[1]", "not a JSON object"),
        (200, b'{"result": {"allow": "true"}}', "decision document"),
    ],
)
def test_bad_answers_are_unavailable(
    opa: OpaAdapter, server: OpaServer, status: int, body: bytes | None, problem: str
) -> None:
    server.status, server.body = status, body
    decision = opa.decide(req(path="/workspace/a"))
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert problem in (decision.why_trail[-1].detail or "")


def test_a_slow_server_times_out_unavailable(server: OpaServer, keyring: Keyring) -> None:
    server.delay_s = 0.5
    adapter = OpaAdapter(server.url, keyring, query="data.agent.decision", deadline_ms=100)
    try:
        decision = adapter.decide(req(path="/workspace/a"))
    finally:
        server.delay_s = 0.0
        adapter.close()
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "timed out" in (decision.why_trail[-1].detail or "")


def test_nobody_listening_is_unavailable(keyring: Keyring) -> None:
    adapter = OpaAdapter(f"http://127.0.0.1:{closed_port()}", keyring, query="data.a.b")
    assert adapter.decide(req()).reason_code is ReasonCode.UNAVAILABLE


def test_bad_urls_and_queries_are_usage_errors(keyring: Keyring) -> None:
    with pytest.raises(UsageError, match="not an OPA server URL"):
        OpaAdapter("file:///etc/passwd", keyring, query="data.a.b")
    with pytest.raises(UsageError, match="not a Rego document path"):
        OpaAdapter("http://127.0.0.1:1", keyring, query="data.a/../../v1/policies")


requests = st.fixed_dictionaries(
    {"tool": st.sampled_from(["fs.read", "fs.write", "net.fetch"])},
    optional={
        "args": st.dictionaries(
            st.sampled_from(["path", "size"]),
            st.sampled_from(["/etc/x", "/workspace/a"]) | st.integers() | st.none(),
            max_size=2,
        )
    },
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_refuses_iff_opa_refuses_or_fails_closed(opa: OpaAdapter, request: Any) -> None:
    decision = opa.decide(request)
    if refused_unencodable(decision, request):  # as natively
        return
    try:
        body = opa.engine_answer(request)
    except AdapterFailure:
        assert decision.reason_code is ReasonCode.UNAVAILABLE
        return
    if "result" not in body:
        assert decision.reason_code is ReasonCode.UNAVAILABLE
        return
    document = body["result"]
    assert decision.action.refuses is not (document["allow"] is True and not document["deny"])
