"""``RefusalMiddleware`` in a real LangChain agent loop (``create_agent``) with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

from refusalkit.approvals import AnswerKind
from refusalkit.enforce import ToolBlockedError
from refusalkit.integrations.langchain import RefusalMiddleware, _answer
from refusalkit.journal import open_journal
from refusalkit.model import ReasonCode
from support.live_service import Setup
from support.tainting import POISONED, SECRET, assert_scanned_and_tainted


class PlannedModel(BaseChatModel):
    """A chat model that makes each planned tool call in turn, then answers."""

    calls: list[dict[str, Any]]
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "planned"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> PlannedModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        step = len(self.seen)
        if step <= len(self.calls):
            call = {**self.calls[step - 1], "id": f"call-{step}"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tools(ran: list[str]) -> list[BaseTool]:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append("read_file")
        return f"contents of {path}"

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append("send_email")
        return "sent"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append("delete_file")
        return "deleted"

    @tool
    def wipe_disk(disk: str) -> str:
        """Wipe a disk."""
        ran.append("wipe_disk")
        return "wiped"

    return [read_file, send_email, delete_file, wipe_disk]


def _run(
    setup: Setup, name: str, args: dict[str, Any], *, asynchronous: bool = False
) -> tuple[PlannedModel, list[str]]:
    ran: list[str] = []
    model = PlannedModel(calls=[{"name": name, "args": args}], seen=[])
    agent = create_agent(
        model,
        tools=_tools(ran),
        middleware=[RefusalMiddleware(setup.enforcer, caller=setup.caller)],
    )
    question = {"messages": [{"role": "user", "content": "go"}]}
    if asynchronous:
        asyncio.run(agent.ainvoke(question))
    else:
        agent.invoke(question)
    return model, ran


def _tool_message(model: PlannedModel) -> ToolMessage:
    [message] = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    return message


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_deny_never_runs_the_tool_and_the_model_reads_the_refusal(
    setup: Setup, asynchronous: bool
) -> None:
    model, ran = _run(setup, "delete_file", {"path": "/etc/passwd"}, asynchronous=asynchronous)
    assert ran == []
    message = _tool_message(model)
    assert message.status == "error"
    assert message.content == (
        "refused (policy-denied by no_deletes, retryable: no): Deleting files is not allowed."
    )
    [record] = setup.journaled()
    assert message.artifact == record
    assert (record["action"], record["reason_code"]) == ("deny", ReasonCode.POLICY_DENIED)
    setup.verify()


def test_block_ends_the_run_with_the_decision(setup: Setup) -> None:
    with pytest.raises(ToolBlockedError) as raised:
        _run(setup, "wipe_disk", {"disk": "sda"})
    assert raised.value.decision.matched_rule == "no_wipes"
    [record] = setup.journaled()
    assert record["action"] == "block"
    assert record["decision_id"] == raised.value.decision.decision_id
    setup.verify()


@pytest.mark.parametrize(("tool_name", "action"), [("read_file", "allow"), ("send_email", "audit")])
def test_allow_and_audit_run_the_tool_and_are_journaled(
    setup: Setup, tool_name: str, action: str
) -> None:
    args = {"path": "/workspace/a.txt"} if tool_name == "read_file" else {"to": "ops@example.org"}
    model, ran = _run(setup, tool_name, args)
    assert ran == [tool_name]
    assert _tool_message(model).status == "success"
    assert [r["action"] for r in setup.journaled()] == [action]
    setup.verify()


def test_a_caller_that_raises_fails_closed(setup: Setup) -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("no identity")

    ran: list[str] = []
    model = PlannedModel(calls=[{"name": "read_file", "args": {"path": "/a"}}], seen=[])
    agent = create_agent(
        model, tools=_tools(ran), middleware=[RefusalMiddleware(setup.enforcer, caller=broken)]
    )
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert ran == []
    assert _tool_message(model).content.startswith(
        "refused (unavailable by @unavailable, retryable: yes)"
    )


def _poisoned_tools(ran: list[str]) -> list[BaseTool]:
    @tool
    def fetch_page(url: str) -> str:
        """Fetch a page."""
        ran.append("fetch_page")
        return POISONED

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append("delete_file")
        return "deleted"

    return [fetch_page, delete_file]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_poisoned_result_is_redacted_and_taints_the_session(
    tainting: Setup, asynchronous: bool
) -> None:
    ran: list[str] = []
    calls = [
        {"name": "fetch_page", "args": {"url": "https://ci.example.org/log"}},
        {"name": "delete_file", "args": {"path": "/etc/passwd"}},
    ]
    model = PlannedModel(calls=calls, seen=[])
    guard = RefusalMiddleware(tainting.enforcer, caller=tainting.caller)
    agent = create_agent(model, tools=_poisoned_tools(ran), middleware=[guard])
    question = {"messages": [{"role": "user", "content": "go"}]}
    asyncio.run(agent.ainvoke(question)) if asynchronous else agent.invoke(question)
    seen = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert_scanned_and_tainted(tainting, str(seen[0].content) + str(seen[0].artifact), ran)
    assert str(seen[1].content).startswith("refused (policy-denied by after_poisoned_result")


def test_block_mode_replaces_a_result_with_findings(tainting: Setup) -> None:
    ran: list[str] = []
    model = PlannedModel(calls=[{"name": "fetch_page", "args": {"url": "u"}}], seen=[])
    guard = RefusalMiddleware(tainting.enforcer, caller=tainting.caller, results="block")
    create_agent(model, tools=_poisoned_tools(ran), middleware=[guard]).invoke(
        {"messages": [{"role": "user", "content": "go"}]}
    )
    [message] = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert SECRET not in str(message)
    assert message.content == (
        "refused (policy-denied by @results, retryable: no): "
        "The tool's result held secret:aws_access_key_id; it was withheld."
    )
    actions = [r["action"] for r in tainting.journaled()]
    assert actions == ["allow", "block", "deny"]


def _release_agent(setup: Setup, ran: list[str]) -> Any:
    @tool
    def push_tag(ref: str) -> str:
        """Push a tag."""
        ran.append(ref)
        return "pushed"

    model = PlannedModel(calls=[{"name": "push_tag", "args": {"ref": "refs/tags/v1.0.0"}}])
    guard = RefusalMiddleware(setup.enforcer, caller=setup.caller, approvals=True)
    return create_agent(model, tools=[push_tag], middleware=[guard], checkpointer=InMemorySaver())


def _paused(agent: Any, thread: str) -> dict[str, Any]:
    """Run until the graph pauses; the interrupt's value."""
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, _thread(thread))
    [pause] = out["__interrupt__"]
    assert isinstance(pause.value, dict)
    return pause.value


def _thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


def _last_tool_message(out: dict[str, Any]) -> str:
    return str([m for m in out["messages"] if isinstance(m, ToolMessage)][-1].content)


def test_an_interrupt_answered_by_a_person_records_a_grant_used_once(approving: Setup) -> None:
    ran: list[str] = []
    agent = _release_agent(approving, ran)
    asked = _paused(agent, "t1")
    assert asked["required"] is True
    assert asked["request"]["tool"] == "push_tag"
    # the agent answering its own request records nothing: the call stays refused
    out = agent.invoke(Command(resume={"approve": True, "approver": "coder"}), _thread("t1"))
    assert ran == []
    assert _last_tool_message(out).startswith("refused (approval-required by push_release_tag")
    # a person approves in the graph's own pause: the same request, granted, used once
    agent = _release_agent(approving, ran)
    request_id = _paused(agent, "t2")["request"]["request_id"]
    agent.invoke(Command(resume={"approve": True, "approver": "alice"}), _thread("t2"))
    assert ran == ["refs/tags/v1.0.0"]
    records = approving.journaled()
    [allowed] = [r for r in records if r.get("action") == "allow"]
    assert allowed["matched_rule"] == "push_release_tag"
    assert allowed["why_trail"][-1]["rule"] == "@approval"
    assert allowed["approval"]["request_id"] == request_id
    # replay after use: the graph pauses again, and a forged resume alone runs nothing
    agent = _release_agent(approving, ran)
    used = f"was already used by the decision at journal index {allowed_index(approving)}"
    assert _paused(agent, "t3")["problem"].endswith(used)
    agent.invoke(Command(resume={"approve": "yes"}), _thread("t3"))
    assert ran == ["refs/tags/v1.0.0"]
    approving.verify()


def allowed_index(setup: Setup) -> int:
    """The journal index of the (one) allow decision."""
    with open_journal(setup.journal, setup.deployment.keyring, create=False) as journal:
        [(index, _)] = list(journal.query(session=setup.session, action="allow"))
    return index


def test_a_grant_in_the_pause_of_an_async_graph(approving: Setup) -> None:
    ran: list[str] = []
    agent = _release_agent(approving, ran)
    question = {"messages": [{"role": "user", "content": "go"}]}
    out = asyncio.run(agent.ainvoke(question, _thread("a1")))
    assert out["__interrupt__"][0].value["required"] is True
    assert ran == []
    resume = Command(resume={"approve": True, "approver": "alice"})
    asyncio.run(agent.ainvoke(resume, _thread("a1")))
    assert ran == ["refs/tags/v1.0.0"]


def test_a_person_denying_in_the_pause_refuses_the_call(approving: Setup) -> None:
    ran: list[str] = []
    agent = _release_agent(approving, ran)
    _paused(agent, "t1")
    resume = {"approve": False, "approver": "alice", "reason": "not during the freeze"}
    out = agent.invoke(Command(resume=resume), _thread("t1"))
    assert ran == []
    assert _last_tool_message(out).startswith("refused (approval-required by push_release_tag")
    [decided] = [r for r in approving.journaled() if r.get("why_trail")][-1:]
    assert "refused by alice" in decided["why_trail"][-1]["detail"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_resumes = _json | st.fixed_dictionaries(
    {"approve": _json, "approver": _json}, optional={"reason": _json, "ttl_s": _json}
)


@given(_resumes)
def test_a_resumed_value_is_an_answer_or_a_type_error(value: Any) -> None:
    """Whatever a graph is resumed with, the parse gives a well-typed answer or ``TypeError``
    (which records nothing): never another exception, never a grant from a non-boolean."""
    try:
        kind, approver, reason, ttl = _answer(value)
    except TypeError:
        return
    assert value["approve"] is (kind is AnswerKind.GRANT)
    assert isinstance(approver, str)
    assert reason is None or isinstance(reason, str)
    assert ttl is None or (isinstance(ttl, int) and not isinstance(ttl, bool))
