"""OpenAI Agents SDK: ``refusal_guardrail``, a tool input guardrail.

Attach it to function tools (``function_tool(..., tool_input_guardrails=[guardrail])``) or
server-wide to an MCP server (``MCPServerStdio(..., tool_input_guardrails=[guardrail])``); every
call is decided on its JSON arguments before the tool runs. ``deny`` → ``reject_content`` with
the refusal line (the model reads it in place of the result); ``block`` → ``raise_exception``
(the run ends with the SDK's ``ToolInputGuardrailTripwireTriggered``); the ``Decision`` is the
guardrail's ``output_info`` either way. Install with ``pip install 'refusalkit[openai-agents]'``.
"""

from __future__ import annotations

from typing import Any

from agents import ToolGuardrailFunctionOutput, ToolInputGuardrail, ToolInputGuardrailData

from refusalkit.enforce import Enforcer
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, json_args
from refusalkit.model import Action, Decision, refusal_line

__all__ = ["refusal_guardrail"]


def _verdict(decision: Decision) -> ToolGuardrailFunctionOutput:
    """The guardrail output of a decision: allow, reject with the refusal line, or raise."""
    if decision.action is Action.BLOCK:
        return ToolGuardrailFunctionOutput.raise_exception(output_info=decision)
    if decision.action is Action.DENY:
        return ToolGuardrailFunctionOutput.reject_content(
            refusal_line(decision), output_info=decision
        )
    return ToolGuardrailFunctionOutput.allow(output_info=decision)


def refusal_guardrail(
    enforcer: Enforcer,
    *,
    caller: CallerSource | None = None,
    to_request: ToRequest | None = None,
    name: str = "refusalkit",
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that decides each call (see the module docstring)."""
    guard = ToolGuard(enforcer, caller, to_request)

    async def decide(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        args: Any
        try:
            args = json_args(context.tool_arguments)
        except (TypeError, ValueError):
            args = context.tool_arguments  # not an object: the guard decides it unavailable
        return _verdict(await guard.adecide(context.tool_name, args))

    return ToolInputGuardrail(guardrail_function=decide, name=name)
