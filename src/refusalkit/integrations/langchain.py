"""LangChain / LangGraph (langchain >= 1.0): ``RefusalMiddleware``, an ``AgentMiddleware``.

``create_agent(model, tools, middleware=[RefusalMiddleware(enforcer, caller=...)])``: every tool
call goes through ``wrap_tool_call`` / ``awrap_tool_call`` first. On ``deny`` the tool is not
called and the model reads a ``ToolMessage(status="error")`` whose content is the refusal line
and whose artifact is the decision's wire form; on ``block`` the run ends with
``ToolBlockedError`` carrying the decision; ``allow`` and ``audit`` run the tool.
Install with ``pip install 'refusalkit[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from refusalkit.enforce import Enforcer
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, refused
from refusalkit.model import Decision, refusal_line

__all__ = ["RefusalMiddleware"]

_Result = ToolMessage | Command[Any]


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
    ) -> None:
        super().__init__()
        self.guard = ToolGuard(enforcer, caller, to_request)

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "RefusalMiddleware"

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        """Decide, then call the tool only if the decision lets it run."""
        call = request.tool_call
        decision = self.guard.decide(call["name"], call["args"])
        if refused(decision):
            return _refusal_message(decision, request)
        return handler(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        """``wrap_tool_call`` for ``ainvoke`` / ``astream``."""
        call = request.tool_call
        decision = await self.guard.adecide(call["name"], call["args"])
        if refused(decision):
            return _refusal_message(decision, request)
        return await handler(request)
