"""OpenAI Agents SDK: ``refusal_guardrail``, a tool input guardrail.

Attach it to function tools (``function_tool(..., tool_input_guardrails=[guardrail])``) or
server-wide to an MCP server (``MCPServerStdio(..., tool_input_guardrails=[guardrail])``); every
call is decided on its JSON arguments before the tool runs. ``deny`` → ``reject_content`` with
the refusal line (the model reads it in place of the result); ``block`` → ``raise_exception``
(the run ends with the SDK's ``ToolInputGuardrailTripwireTriggered``); the ``Decision`` is the
guardrail's ``output_info`` either way. Install with ``pip install 'refusalkit[openai-agents]'``.

``refusal_guardrails`` gives that input guardrail and its tool output guardrail, which share one
``ToolGuard``: attach both (``function_tool(..., tool_input_guardrails=[i],
tool_output_guardrails=[o])``) and every output of an allowed call passes the result check
(``ToolGuard.output``, the MCP gateway's path) before the model reads it: findings become typed
placeholders (``results="redact"``) or the output becomes the refusal line (``"block"``), and a
result filter's match taints the session, so the pack's rules can refuse later calls.

``RefusalApprovals`` maps the SDK's approval pause to refusalkit's (docs/approvals.md): its
``needs_approval(tool)`` is the tool's ``needs_approval`` (true while the pack asks for approval
and no valid grant covers the exact call: the check uses up no grant, and journals the request
for approval once); ``approve(state, item, approver=...)`` records a signed, journaled grant of
that request and then approves the item in the SDK's ``RunState``; ``reject`` records a denial.
The resumed call is then decided as any call is: ``allow`` once by the same rule, using the
grant. An approval given in the SDK alone (``state.approve`` without a grant) lets nothing run:
the input guardrail still refuses the call ``approval-required``.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from agents import (
    RunContextWrapper,
    RunState,
    ToolApprovalItem,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from refusalkit.approvals import AnswerKind, ApprovalCheck
from refusalkit.enforce import Enforcer, LocalEnforcer, ResultMode, fail_closed
from refusalkit.errors import ApprovalError, UsageError
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, json_args
from refusalkit.model import Action, Decision, refusal_line

__all__ = ["RefusalApprovals", "refusal_guardrail", "refusal_guardrails"]

_CALLS = 4096  # decisions awaiting their call's output, at most
_UNDECIDED = "the tool's output has no decision of its call (attach the input guardrail too)"


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
    return _Guardrails(ToolGuard(enforcer, caller, to_request), name).input()


def refusal_guardrails(
    enforcer: Enforcer,
    *,
    caller: CallerSource | None = None,
    to_request: ToRequest | None = None,
    results: ResultMode | str = ResultMode.REDACT,
    name: str = "refusalkit",
) -> tuple[ToolInputGuardrail[Any], ToolOutputGuardrail[Any]]:
    """The input guardrail and the output guardrail of one guard (see the module docstring)."""
    pair = _Guardrails(ToolGuard(enforcer, caller, to_request, results=results), name)
    return pair.input(), pair.output()


class _Guardrails:
    """One guard's two guardrails: the input one keeps each call's decision for the output one."""

    def __init__(self, guard: ToolGuard, name: str) -> None:
        self.guard, self.name = guard, name
        self.decided: OrderedDict[str, Decision] = OrderedDict()

    def input(self) -> ToolInputGuardrail[Any]:
        async def decide(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
            context = data.context
            args: Any
            try:
                args = json_args(context.tool_arguments)
            except (TypeError, ValueError):
                args = context.tool_arguments  # not an object: the guard decides it unavailable
            decision = await self.guard.adecide(context.tool_name, args)
            self.decided[context.tool_call_id] = decision
            while len(self.decided) > _CALLS:
                self.decided.popitem(last=False)
            return _verdict(decision)

        return ToolInputGuardrail(guardrail_function=decide, name=self.name)

    def output(self) -> ToolOutputGuardrail[Any]:
        async def check(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
            context = data.context
            call = self.decided.pop(context.tool_call_id, None)
            if call is None:
                undecided = fail_closed({"tool": context.tool_name}, _UNDECIDED)
                return ToolGuardrailFunctionOutput.reject_content(
                    refusal_line(undecided), undecided
                )
            value = data.output if isinstance(data.output, (str, dict, list)) else str(data.output)
            output, refusal = await self.guard.aoutput(context.tool_name, call, value)
            if refusal is not None:
                return ToolGuardrailFunctionOutput.reject_content(refusal_line(refusal), refusal)
            if output == value:  # nothing found: the model reads the output as the tool gave it
                return ToolGuardrailFunctionOutput.allow(output_info=call)
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            return ToolGuardrailFunctionOutput.reject_content(text, output_info=call)

        return ToolOutputGuardrail(guardrail_function=check, name=self.name)


_NeedsApproval = Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]


class RefusalApprovals:
    """The SDK's ``needs_approval`` pause, answered with refusalkit grants (module docstring)."""

    def __init__(
        self,
        enforcer: LocalEnforcer,
        *,
        caller: CallerSource | None = None,
        to_request: ToRequest | None = None,
    ) -> None:
        if not isinstance(enforcer, LocalEnforcer):
            raise UsageError(
                "RefusalApprovals needs a local enforcer with a journal and its keyring",
                hint="With the service, answer requests with `POST /v1/approvals/{id}/grant`.",
            )
        self.enforcer = enforcer
        self.guard = ToolGuard(enforcer, caller, to_request)
        self.asked: OrderedDict[str, ApprovalCheck] = OrderedDict()

    def needs_approval(self, tool: str) -> _NeedsApproval:
        """The ``needs_approval`` of the function tool named ``tool``."""

        async def check(_ctx: RunContextWrapper[Any], args: dict[str, Any], call_id: str) -> bool:
            found = await asyncio.to_thread(self.guard.approval, tool, args)
            self.asked[call_id] = found
            while len(self.asked) > _CALLS:
                self.asked.popitem(last=False)
            return found.required

        return check

    def request_of(self, item: ToolApprovalItem) -> ApprovalCheck:
        """The approval check behind one of the SDK's interruptions."""
        found = self.asked.get(item.call_id or "")
        if found is None or found.request_id is None:
            raise ApprovalError(
                "no request for approval is known for this interruption",
                hint="Give the tool needs_approval=approvals.needs_approval(NAME).",
            )
        return found

    def approve(
        self, state: RunState[Any], item: ToolApprovalItem, *, approver: str,
        ttl_s: int | None = None,
    ) -> int:  # fmt: skip
        """Grant the request behind ``item`` as ``approver`` (signed, journaled), then approve
        the item in ``state``; the grant's journal index. ``ApprovalError`` when refused (an
        agent approving its own request, a lapsed or answered request): nothing is approved."""
        found = self.request_of(item)
        index, _ = self.enforcer.answer(AnswerKind.GRANT, str(found.request_id), approver,
                                        ttl_s=ttl_s)  # fmt: skip
        state.approve(item)
        return index

    def reject(
        self, state: RunState[Any], item: ToolApprovalItem, *, approver: str,
        reason: str | None = None,
    ) -> int:  # fmt: skip
        """Deny the request behind ``item`` (signed, journaled), then reject it in ``state``."""
        found = self.request_of(item)
        index, _ = self.enforcer.answer(AnswerKind.DENIAL, str(found.request_id), approver,
                                        reason=reason)  # fmt: skip
        state.reject(item, rejection_message=reason)
        return index
