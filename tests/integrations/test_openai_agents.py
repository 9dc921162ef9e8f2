"""``refusal_guardrail`` in a real OpenAI Agents SDK run with the SDK's own ``ScriptedModel``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import (
    Agent,
    FunctionTool,
    Runner,
    ToolInputGuardrailTripwireTriggered,
    function_tool,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call

from refusalkit.errors import ApprovalError
from refusalkit.integrations.openai_agents import (
    RefusalApprovals,
    refusal_guardrail,
    refusal_guardrails,
)
from refusalkit.journal import open_journal
from refusalkit.model import Action, Decision
from support.live_service import Setup
from support.tainting import POISONED, SECRET, assert_scanned_and_tainted

set_tracing_disabled(disabled=True)


def _tools(setup: Setup, ran: list[str], **kw: Any) -> list[FunctionTool]:
    guard = refusal_guardrail(setup.enforcer, caller=kw.get("caller", setup.caller))

    @function_tool(tool_input_guardrails=[guard])
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append("read_file")
        return f"contents of {path}"

    @function_tool(tool_input_guardrails=[guard])
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append("send_email")
        return "sent"

    @function_tool(tool_input_guardrails=[guard])
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append("delete_file")
        return "deleted"

    @function_tool(tool_input_guardrails=[guard])
    def wipe_disk(disk: str) -> str:
        """Wipe a disk."""
        ran.append("wipe_disk")
        return "wiped"

    return [read_file, send_email, delete_file, wipe_disk]


def _run(
    setup: Setup, name: str, args: dict[str, Any], **kw: Any
) -> tuple[ScriptedModel, list[str]]:
    ran: list[str] = []
    model = ScriptedModel([[function_call(name, args, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="worker", model=model, tools=_tools(setup, ran, **kw))
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "done"
    return model, ran


def _tool_output(model: ScriptedModel) -> str:
    """What the model read for call c1 in its next input."""
    second = model.calls[1]
    [item] = [
        i for i in second.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert item["call_id"] == "c1"
    return str(item["output"])


def test_deny_rejects_the_content_and_never_runs_the_tool(setup: Setup) -> None:
    model, ran = _run(setup, "delete_file", {"path": "/etc/passwd"})
    assert ran == []
    assert _tool_output(model) == (
        "refused (policy-denied by no_deletes, retryable: no): Deleting files is not allowed."
    )
    [record] = setup.journaled()
    assert record["action"] == "deny"
    setup.verify()


def test_block_raises_with_the_decision(setup: Setup) -> None:
    ran: list[str] = []
    model = ScriptedModel([[function_call("wipe_disk", {"disk": "sda"}, call_id="c1")]])
    agent = Agent(name="worker", model=model, tools=_tools(setup, ran))
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as raised:
        Runner.run_sync(agent, "go")
    assert ran == []
    decision = raised.value.output.output_info
    assert isinstance(decision, Decision)
    assert decision.action is Action.BLOCK
    [record] = setup.journaled()
    assert record["decision_id"] == decision.decision_id
    setup.verify()


@pytest.mark.parametrize(("tool_name", "action"), [("read_file", "allow"), ("send_email", "audit")])
def test_allow_and_audit_run_the_tool_and_are_journaled(
    setup: Setup, tool_name: str, action: str
) -> None:
    args = {"path": "/workspace/a.txt"} if tool_name == "read_file" else {"to": "ops@example.org"}
    model, ran = _run(setup, tool_name, args)
    assert ran == [tool_name]
    assert not _tool_output(model).startswith("refused")
    assert [r["action"] for r in setup.journaled()] == [action]
    setup.verify()


def test_a_caller_that_raises_fails_closed(setup: Setup) -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("no identity")

    model, ran = _run(setup, "read_file", {"path": "/a"}, caller=broken)
    assert ran == []
    assert _tool_output(model).startswith("refused (unavailable by @unavailable, retryable: yes)")


@pytest.mark.parametrize(
    ("tool_name", "ran_expected", "refused"),
    [("delete_file", [], True), ("read_file", ["read_file"], False)],
)
def test_server_wide_on_an_mcp_server(
    setup: Setup, tmp_path: Path, tool_name: str, ran_expected: list[str], refused: bool
) -> None:
    ran_log = tmp_path / "ran.log"
    ran_log.touch()
    script = Path(__file__).with_name("mcp_tools_server.py")
    model = ScriptedModel(
        [[function_call(tool_name, {"path": "/a"}, call_id="c1")], [assistant_message("done")]]
    )

    async def run() -> None:
        server = MCPServerStdio(
            params={
                "command": sys.executable,
                "args": [str(script)],
                "env": {**os.environ, "RAN_LOG": str(ran_log)},
            },
            tool_input_guardrails=[refusal_guardrail(setup.enforcer, caller=setup.caller)],
        )
        async with server:
            agent = Agent(name="worker", model=model, mcp_servers=[server])
            await Runner.run(agent, "go")

    asyncio.run(run())
    assert ran_log.read_text().split() == ran_expected
    assert _tool_output(model).startswith("refused (policy-denied by no_deletes") is refused
    [record] = setup.journaled()
    assert record["action"] == ("deny" if refused else "allow")
    setup.verify()


@pytest.mark.parametrize(
    "arguments",
    ['{"path": "/workspace/a.txt", "path": "/etc/shadow"}', '{"path": NaN}', "[1]", "{bad"],
    ids=["duplicate-key", "nan", "not-an-object", "not-json"],
)
def test_arguments_that_could_be_read_two_ways_are_refused(setup: Setup, arguments: str) -> None:
    """A model that repeats a key could have one value approved and the other run: refused."""
    ran: list[str] = []
    model = ScriptedModel(
        [[function_call("read_file", arguments, call_id="c1")], [assistant_message("done")]]
    )
    agent = Agent(name="worker", model=model, tools=_tools(setup, ran))
    Runner.run_sync(agent, "go")
    assert ran == []
    assert _tool_output(model).startswith("refused (unavailable by @unavailable, retryable: yes)")


def _poisoned_run(setup: Setup, results: str = "redact") -> tuple[ScriptedModel, list[str]]:
    ran: list[str] = []
    guards = refusal_guardrails(setup.enforcer, caller=setup.caller, results=results)
    rails = {"tool_input_guardrails": [guards[0]], "tool_output_guardrails": [guards[1]]}

    @function_tool(**rails)
    def fetch_page(url: str) -> str:
        """Fetch a page."""
        ran.append("fetch_page")
        return POISONED

    @function_tool(**rails)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append("delete_file")
        return "deleted"

    model = ScriptedModel(
        [
            [function_call("fetch_page", {"url": "https://ci.example.org/log"}, call_id="c1")],
            [function_call("delete_file", {"path": "/etc/passwd"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="worker", model=model, tools=[fetch_page, delete_file])
    assert Runner.run_sync(agent, "go").final_output == "done"
    return model, ran


def _outputs(model: ScriptedModel) -> dict[str, str]:
    last = model.calls[-1].input
    return {
        i["call_id"]: str(i["output"])
        for i in last
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def test_a_poisoned_output_is_redacted_and_taints_the_session(tainting: Setup) -> None:
    model, ran = _poisoned_run(tainting)
    outputs = _outputs(model)
    assert_scanned_and_tainted(tainting, outputs["c1"], ran)
    assert outputs["c2"].startswith("refused (policy-denied by after_poisoned_result")


def test_block_mode_replaces_an_output_with_findings(tainting: Setup) -> None:
    model, _ = _poisoned_run(tainting, results="block")
    first = _outputs(model)["c1"]
    assert SECRET not in first
    assert first.startswith("refused (policy-denied by @results, retryable: no)")


def _release(setup: Setup) -> tuple[RefusalApprovals, Agent[Any], list[str], ScriptedModel]:
    ran: list[str] = []
    approvals = RefusalApprovals(setup.enforcer, caller=setup.caller)  # type: ignore[arg-type]
    guard = refusal_guardrail(setup.enforcer, caller=setup.caller)

    @function_tool(
        needs_approval=approvals.needs_approval("push_tag"), tool_input_guardrails=[guard]
    )
    def push_tag(ref: str) -> str:
        """Push a tag."""
        ran.append(ref)
        return "pushed"

    turns = [
        [function_call("push_tag", {"ref": "refs/tags/v1.0.0"}, call_id="c1")],
        [assistant_message("done")],
    ]
    model = ScriptedModel(turns * 2)
    return approvals, Agent(name="release-bot", model=model, tools=[push_tag]), ran, model


def test_an_approval_in_the_sdk_pause_records_a_grant_used_once(approving: Setup) -> None:
    approvals, agent, ran, _ = _release(approving)
    paused = Runner.run_sync(agent, "go")
    [item] = paused.interruptions
    assert ran == []
    state = paused.to_state()
    with pytest.raises(ApprovalError, match="cannot approve its own request"):
        approvals.approve(state, item, approver="coder")
    grant = approvals.approve(state, item, approver="alice")
    assert Runner.run_sync(agent, state).final_output == "done"
    assert ran == ["refs/tags/v1.0.0"]
    records = approving.journaled()
    [asked] = [r for r in records if r.get("reason_code") == "approval-required"]
    [allowed] = [r for r in records if r.get("action") == "allow"]
    assert allowed["matched_rule"] == "push_release_tag"
    assert f"at journal index {grant}" in allowed["why_trail"][-1]["test"]
    with open_journal(approving.journal, approving.deployment.keyring, create=False) as journal:
        answer = json.loads(journal.entries(grant, grant + 1)[0])
    assert answer["approver"] == "alice"
    assert answer["request_id"] == asked["approval"]["request_id"]
    # the same call again: the grant was used, so the SDK pauses again and nothing runs
    again = Runner.run_sync(agent, "go")
    assert len(again.interruptions) == 1
    assert ran == ["refs/tags/v1.0.0"]
    approving.verify()


def test_an_approval_in_the_sdk_alone_lets_nothing_run(approving: Setup) -> None:
    _, agent, ran, model = _release(approving)
    paused = Runner.run_sync(agent, "go")
    state = paused.to_state()
    state.approve(paused.interruptions[0])  # no refusalkit grant: the guardrail still refuses
    Runner.run_sync(agent, state)
    assert ran == []
    assert _outputs(model)["c1"].startswith("refused (approval-required by push_release_tag")


def test_server_wide_output_guardrail_on_an_mcp_server(tainting: Setup, tmp_path: Path) -> None:
    ran_log = tmp_path / "ran.log"
    ran_log.touch()
    script = Path(__file__).with_name("mcp_tools_server.py")
    model = ScriptedModel(
        [
            [function_call("fetch_page", {"url": "https://ci.example.org"}, call_id="c1")],
            [function_call("delete_file", {"path": "/etc/passwd"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    guards = refusal_guardrails(tainting.enforcer, caller=tainting.caller)

    async def run() -> None:
        server = MCPServerStdio(
            params={
                "command": sys.executable,
                "args": [str(script)],
                "env": {**os.environ, "RAN_LOG": str(ran_log)},
            },
            tool_input_guardrails=[guards[0]],
            tool_output_guardrails=[guards[1]],
        )
        async with server:
            await Runner.run(Agent(name="worker", model=model, mcp_servers=[server]), "go")

    asyncio.run(run())
    outputs = _outputs(model)
    assert_scanned_and_tainted(tainting, outputs["c1"], ran_log.read_text().split())
    assert outputs["c2"].startswith("refused (policy-denied by after_poisoned_result")
