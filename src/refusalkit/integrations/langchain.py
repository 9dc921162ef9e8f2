"""LangChain / LangGraph (langchain >= 1.0): ``RefusalMiddleware``, an ``AgentMiddleware``.

``create_agent(model, tools, middleware=[RefusalMiddleware(enforcer, caller=...)])``: every tool
call goes through ``wrap_tool_call`` / ``awrap_tool_call`` first. On ``deny`` the tool is not
called and the model reads a ``ToolMessage(status="error")`` whose content is the refusal line
and whose artifact is the decision's wire form; on ``block`` the run ends with
``ToolBlockedError`` carrying the decision; ``allow`` and ``audit`` run the tool. The tool's
``ToolMessage`` (content and artifact, also inside a ``Command``'s messages) then passes the
result check (``ToolGuard.output``): findings become typed placeholders (``results="redact"``),
or the message becomes the refusal (``"block"``); a result filter's match taints the session.

With ``approvals=True`` (the graph needs a checkpointer), a call the pack asks a person to
approve, and that no valid grant covers, pauses the graph with LangGraph's ``interrupt``; the
value shows the request for approval (journaled once; the check uses up no grant). Resume with
``Command(resume={"approve": true, "approver": NAME})`` (optionally ``"ttl_s"``, or ``"approve":
false`` with a ``"reason"``): the answer is recorded as a signed, journaled refusalkit grant or
denial of that request (``LocalEnforcer.answer``; an agent cannot answer its own request), and
the call is then decided as any call is: ``allow`` once by the same rule, using the grant. The
resumed value alone grants nothing: without a recorded grant the call is refused
``approval-required``.
Install with ``pip install 'refusalkit[langchain]'``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command, interrupt

from refusalkit.approvals import AnswerKind, ApprovalCheck
from refusalkit.enforce import Enforcer, LocalEnforcer, ResultMode
from refusalkit.errors import RefusalkitError
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, refused
from refusalkit.model import Decision, refusal_line

__all__ = ["RefusalMiddleware"]

_Result = ToolMessage | Command[Any]
_log = logging.getLogger("refusalkit.integrations")


def _refusal_message(decision: Decision, request: ToolCallRequest) -> ToolMessage:
    """The message the model reads in place of the tool's result."""
    call = request.tool_call
    return ToolMessage(
        content=refusal_line(decision),
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error",
        artifact=decision.to_dict(),
    )


class RefusalMiddleware(AgentMiddleware):
    """Decides each tool call before it runs (see the module docstring)."""

    def __init__(
        self,
        enforcer: Enforcer,
        *,
        caller: CallerSource | None = None,
        to_request: ToRequest | None = None,
        results: ResultMode | str = ResultMode.REDACT,
        approvals: bool = False,
    ) -> None:
        super().__init__()
        self.guard = ToolGuard(enforcer, caller, to_request, results=results)
        self.approvals = approvals

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "RefusalMiddleware"

    def _answered(self, found: ApprovalCheck) -> None:
        """Pause for a person when the call waits for one; record their answer as refusalkit's.
        A malformed or refused answer records nothing (the call's decision then refuses it)."""
        if not found.required or found.request_id is None:
            return
        value = interrupt({"refusalkit": "approval-required", **found.to_dict()})
        enforcer = self.guard.enforcer
        try:
            kind, approver, reason, ttl = _answer(value)
            if isinstance(enforcer, LocalEnforcer):
                enforcer.answer(kind, found.request_id, approver, ttl_s=ttl, reason=reason)
        except (TypeError, RefusalkitError) as exc:
            _log.warning("an approval answer was not recorded: %s", exc)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """Decide, then call the tool only if the decision lets it run."""
        call = request.tool_call
        if self.approvals:
            self._answered(self.guard.approval(call["name"], call["args"]))
        decision = self.guard.decide(call["name"], call["args"])
        if refused(decision):
            return _refusal_message(decision, request)
        result = handler(request)
        return _checked(result, request, self.guard.output(call["name"], decision, _parts(result)))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        """``wrap_tool_call`` for ``ainvoke`` / ``astream``."""
        call = request.tool_call
        if self.approvals:
            found = await asyncio.to_thread(self.guard.approval, call["name"], call["args"])
            self._answered(found)
        decision = await self.guard.adecide(call["name"], call["args"])
        if refused(decision):
            return _refusal_message(decision, request)
        result = await handler(request)
        output = await self.guard.aoutput(call["name"], decision, _parts(result))
        return _checked(result, request, output)


def _answer(value: Any) -> tuple[AnswerKind, str, str | None, int | None]:
    """A resumed value: ``{"approve": bool, "approver": NAME, "reason"?, "ttl_s"?}``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("approve"), bool):
        raise TypeError("resume with {'approve': true|false, 'approver': NAME}")
    approver, reason, ttl = value.get("approver"), value.get("reason"), value.get("ttl_s")
    if not isinstance(approver, str) or not isinstance(reason, str | None):
        raise TypeError("the approver (and any reason) must be text")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int)):
        raise TypeError("ttl_s must be a whole number of seconds")
    return AnswerKind.GRANT if value["approve"] else AnswerKind.DENIAL, approver, reason, ttl


def _messages(result: _Result) -> list[ToolMessage]:
    """The tool messages a result carries (itself, or those of a ``Command``'s update)."""
    if isinstance(result, ToolMessage):
        return [result]
    update = result.update if isinstance(result.update, dict) else {}
    return [m for m in update.get("messages", ()) if isinstance(m, ToolMessage)]


def _parts(result: _Result) -> list[list[Any]]:
    """What the model (and the transcript) may read of a result: each message's content and
    artifact, checked as one value."""
    return [[m.content, m.artifact] for m in _messages(result)]


def _checked(
    result: _Result, request: ToolCallRequest, output: tuple[Any, Decision | None]
) -> _Result:
    """The result with its messages as checked, or the refusal that replaces it."""
    messages = _messages(result)
    checked, refusal = output
    if refusal is not None:
        return _refusal_message(refusal, request)
    if checked == _parts(result):
        return result
    new = {id(m): m.model_copy(update={"content": c, "artifact": a})
           for m, (c, a) in zip(messages, checked, strict=True)}  # fmt: skip
    if isinstance(result, ToolMessage):
        return new[id(result)]
    update = dict(result.update) if isinstance(result.update, dict) else {}
    update["messages"] = [new.get(id(m), m) for m in update.get("messages", ())]
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)
