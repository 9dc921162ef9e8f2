"""The AGT adapter against the real Agent Governance Toolkit ``PolicyEvaluator``.

Golden mappings for every AGT action (docs/design/engines.md §AGT). The actions AGT's YAML rules
take (allow, audit, deny, block) come from rules; the others (warn, log, require_approval,
rate_limited) reach ``PolicyEvaluator`` from external backends, AGT's documented extension point,
so they come from a backend registered on the real evaluator.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.engines import AgtAdapter
from refusalkit.engines._agt import AGT_ACTIONS
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode
from support.net import closed_port
from support.records import refused_unencodable, valid_record

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from agent_os.policies.backends import BackendDecision, OPABackend

Write = Callable[[str, str], Path]

POLICY = """\
name: agent-tools
version: "3"
rules:
  - name: rm-rf
    condition: {field: command, operator: contains, value: "rm -rf"}
    action: block
    priority: 300
    message: Never delete recursively.
  - name: no-etc
    condition: {field: path, operator: matches, value: "^/etc/"}
    action: deny
    priority: 200
    message: Not under /etc.
  - name: shell-audit
    condition: {field: tool_name, operator: eq, value: shell.run}
    action: audit
    priority: 150
  - name: workspace
    condition: {field: path, operator: matches, value: "^/workspace/"}
    action: allow
    priority: 100
  - name: big
    condition: {field: size, operator: gt, value: 100}
    action: deny
    priority: 50
defaults:
  action: deny
"""


@dataclass
class Backend:
    """An external backend as AGT defines one: a name and ``evaluate(context)``."""

    action: str
    allowed: bool
    error: str | None = None
    name: str = "ext"

    def evaluate(self, context: dict[str, Any]) -> Any:
        return BackendDecision(
            allowed=self.allowed, action=self.action, reason="backend", backend=self.name,
            error=self.error,
        )  # fmt: skip


def req(tool: str = "fs.write", **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "caller": {"agent": "coder"}}


@pytest.fixture
def policy(write: Write) -> Path:
    return write("agent-tools.yaml", POLICY)


@pytest.fixture
def agt(policy: Path, keyring: Keyring) -> AgtAdapter:
    return AgtAdapter(policy, keyring, deadline_ms=10_000)


RULE_GOLDEN = [
    (req(path="/workspace/a"), "allow", Action.ALLOW, None, "agent-tools/workspace"),
    (req("shell.run", command="ls"), "audit", Action.AUDIT, None, "agent-tools/shell-audit"),
    (req(path="/etc/x"), "deny", Action.DENY, ReasonCode.POLICY_DENIED, "agent-tools/no-etc"),
    (req("shell.run", command="rm -rf /"), "block", Action.BLOCK, ReasonCode.POLICY_DENIED,
     "agent-tools/rm-rf"),
    (req(path="/tmp/x"), "deny", Action.DENY, ReasonCode.POLICY_DENIED, "@default"),
]  # fmt: skip


@pytest.mark.parametrize(("request_", "agt_action", "action", "code", "rule"), RULE_GOLDEN)
def test_golden_rule_actions(
    agt: AgtAdapter, request_: Any, agt_action: str, action: Action, code: Any, rule: str
) -> None:
    assert agt.engine_answer(request_).action == agt_action
    decision = agt.decide(request_)
    assert (decision.action, decision.reason_code, decision.matched_rule) == (action, code, rule)
    assert decision.engine.name == "agt"
    assert (decision.policy.id, decision.policy.version) == ("agent-tools", "3")
    valid_record(decision.to_dict())


BACKEND_GOLDEN = [
    ("allow", True, Action.ALLOW, None),
    ("audit", True, Action.AUDIT, None),
    ("warn", True, Action.AUDIT, None),
    ("log", True, Action.AUDIT, None),
    ("deny", False, Action.DENY, ReasonCode.POLICY_DENIED),
    ("block", False, Action.BLOCK, ReasonCode.POLICY_DENIED),
    ("require_approval", False, Action.DENY, ReasonCode.APPROVAL_REQUIRED),
    ("rate_limited", False, Action.DENY, ReasonCode.RATE_LIMITED),
]


def test_the_golden_table_covers_every_action() -> None:
    assert {row[0] for row in BACKEND_GOLDEN} == set(AGT_ACTIONS)


@pytest.mark.parametrize(("agt_action", "allowed", "action", "code"), BACKEND_GOLDEN)
def test_golden_backend_actions(
    write: Write, keyring: Keyring, agt_action: str, allowed: bool, action: Action, code: Any
) -> None:
    policy = write("empty.yaml", "name: empty\nrules: []\n")
    adapter = AgtAdapter(policy, keyring, backends=[Backend(agt_action, allowed)])
    decision = adapter.decide(req())
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        action, code, "external:ext",
    )  # fmt: skip
    if code is not None:
        assert decision.reason_codes_version == code.since
    valid_record(decision.to_dict())


@pytest.mark.parametrize(
    "backend",
    [
        Backend("deny", False, error="engine down"),
        Backend("escalate", False),  # an action nobody documented
        Backend("allow", False),  # `allowed` contradicts the action
        Backend("deny", True),
    ],
)
def test_backend_errors_and_unknown_answers_are_unavailable(
    write: Write, keyring: Keyring, backend: Backend
) -> None:
    adapter = AgtAdapter(write("e.yaml", "name: e\nrules: []\n"), keyring, backends=[backend])
    decision = adapter.decide(req())
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
    valid_record(decision.to_dict())


def test_agts_own_opa_backend_unreachable_is_unavailable(write: Write, keyring: Keyring) -> None:
    url = f"http://127.0.0.1:{closed_port()}"  # nobody listens there
    backend = OPABackend(mode="remote", opa_url=url, package="agent")
    adapter = AgtAdapter(write("e.yaml", "name: e\nrules: []\n"), keyring, backends=[backend])
    assert adapter.engine_answer(req()).allowed is False  # AGT itself fails closed ...
    decision = adapter.decide(req())  # ... and the record says why: no verdict, not a rule
    assert decision.reason_code is ReasonCode.UNAVAILABLE


def test_an_evaluation_error_is_unavailable_not_a_rule(agt: AgtAdapter) -> None:
    request = req(size="huge")  # `gt 100` on a string: AGT catches the TypeError, denies
    assert agt.engine_answer(request).action == "deny"
    decision = agt.decide(request)
    assert (decision.reason_code, decision.matched_rule) == (ReasonCode.UNAVAILABLE, "@unavailable")


def test_the_trail_names_the_rule_field_and_a_redacted_value(
    agt: AgtAdapter, keyring: Keyring
) -> None:
    decision = agt.decide(req(path="/etc/shadow"))
    (step,) = decision.why_trail
    assert (step.rule, step.field, step.decisive) == ("agent-tools/no-etc", "args.path", True)
    assert step.value == keyring.redactor().token("unclassified", "/etc/shadow")
    assert step.test == "agt: path matches '^/etc/'"
    assert decision.message == "Not under /etc."
    assert "/etc/shadow" not in json.dumps(decision.to_dict())


def test_an_invalid_policy_names_file_line_and_key(write: Write, keyring: Keyring) -> None:
    path = write("bad.yaml", "name: bad\nrules:\n  - name: r\n    action: explode\n")
    with pytest.raises(PolicyError) as info:
        AgtAdapter(path, keyring, deadline_ms=10_000)
    assert (info.value.file, info.value.line) == (str(path), 3)
    assert "rules[0]" in str(info.value)


# -- property: the adapter agrees with AGT except where it fails closed ----------------------------

requests = st.fixed_dictionaries(
    {"tool": st.sampled_from(["fs.write", "shell.run", "net.fetch"])},
    optional={
        "args": st.dictionaries(
            st.sampled_from(["path", "command", "size"]),
            st.sampled_from(["/etc/x", "/workspace/a", "rm -rf /", "ls", "7"])
            | st.integers(-(2**60), 2**60)
            | st.none()
            | st.booleans(),
            max_size=3,
        ),
        "caller": st.fixed_dictionaries({"agent": st.sampled_from(["coder", "ops"])}),
    },
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_refuses_iff_agt_refuses_or_fails_closed(agt: AgtAdapter, request: Any) -> None:
    decision = agt.decide(request)
    if refused_unencodable(decision, request):  # as natively
        return
    alone = agt.engine_answer(request)
    if alone.audit_entry.get("error"):  # the documented fail-closed case: AGT erred
        assert decision.reason_code is ReasonCode.UNAVAILABLE
        return
    assert decision.action.refuses is (not alone.allowed)
    assert decision.reason_code is not ReasonCode.UNAVAILABLE


def test_a_backend_reason_that_echoes_the_request_is_redacted(
    write: Write, keyring: Keyring
) -> None:
    @dataclass
    class Echo:
        name: str = "echo"

        def evaluate(self, context: dict[str, Any]) -> Any:
            return BackendDecision(allowed=False, action="deny",
                                   reason=f"denied {context['path']}", backend="echo")  # fmt: skip

    adapter = AgtAdapter(write("e.yaml", "name: e\nrules: []\n"), keyring, backends=[Echo()])
    decision = adapter.decide(req(path="/secret/plan.txt"))
    assert decision.reason_code is ReasonCode.POLICY_DENIED
    assert "/secret/plan.txt" not in json.dumps(decision.to_dict())
