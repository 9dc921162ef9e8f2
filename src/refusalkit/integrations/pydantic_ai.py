"""PydanticAI: ``RefusalCapability``, a capability that decides every tool call before it runs.

``Agent(model, tools=[...], capabilities=[RefusalCapability(enforcer, caller=...)])``: each
call is decided on its validated arguments in ``before_tool_execute``, after every other
capability's (it orders itself innermost), so just before the tool runs. On ``deny`` the tool
does not run and the model reads the refusal line as the tool's return (the decision's wire
form rides in ``ToolReturn.metadata``, which the model does not see); a retryable code
(``attestation-failed``, ``unavailable``) raises ``ModelRetry`` with the line instead, so the
model may call again; on ``block`` the run ends with ``ToolBlockedError`` carrying the decision.
After an allowed call ran, ``after_tool_execute`` passes its result (a ``ToolReturn``'s value
and content, or any value as its JSON form) through the result check (``ToolGuard.output``, the
MCP gateway's path): findings become typed placeholders (``results="redact"``) or the result
becomes the refusal line (``"block"``), and a result filter's match taints the session.
Install with ``pip install 'refusalkit[pydantic-ai]'``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from pydantic_ai import ModelRetry, RunContext, ToolReturn
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import CapabilityOrdering, ValidatedToolArgs
from pydantic_ai.exceptions import SkipToolExecution
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_jsonable_python

from refusalkit.enforce import Enforcer, ResultMode, fail_closed
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, refused
from refusalkit.model import Decision, refusal_line

__all__ = ["RefusalCapability"]

_CALLS = 4096  # decisions awaiting their call's result, at most
_UNDECIDED = "the tool's result has no decision of its call"


@dataclass
class RefusalCapability(AbstractCapability[Any]):
    """Decides each tool call before it runs (see the module docstring)."""

    enforcer: Enforcer
    _: KW_ONLY
    caller: CallerSource | None = None
    to_request: ToRequest | None = None
    results: ResultMode | str = ResultMode.REDACT
    id: str | None = "refusalkit"
    guard: ToolGuard = field(init=False, repr=False)
    decided: OrderedDict[str, Decision] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.guard = ToolGuard(self.enforcer, self.caller, self.to_request, results=self.results)
        self.decided = OrderedDict()

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not buildable from an agent spec: it holds a live enforcer."""
        return None

    def get_ordering(self) -> CapabilityOrdering:
        """Innermost: its ``before_tool_execute`` runs after every other capability's, so the
        decision is on the arguments the tool will actually run with (a capability that
        rewrites arguments cannot slip a change in after the decision)."""
        return CapabilityOrdering(position="innermost")

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],  # noqa: ARG002 (the framework's hook signature)
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,  # noqa: ARG002 (the framework's hook signature)
        args: ValidatedToolArgs,
    ) -> ValidatedToolArgs:
        """Decide; the arguments pass on unchanged only if the decision lets the tool run."""
        decision = await self.guard.adecide(call.tool_name, args)
        if not refused(decision):
            self.decided[call.tool_call_id] = decision
            while len(self.decided) > _CALLS:
                self.decided.popitem(last=False)
            return args
        line = refusal_line(decision)
        if decision.retryable:
            raise ModelRetry(line)
        raise SkipToolExecution(ToolReturn(return_value=line, metadata=decision.to_dict()))

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],  # noqa: ARG002 (the framework's hook signature)
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,  # noqa: ARG002 (the framework's hook signature)
        args: ValidatedToolArgs,  # noqa: ARG002 (the framework's hook signature)
        result: Any,
    ) -> Any:
        """The result as the model may see it, or the refusal that replaces it."""
        decision = self.decided.pop(call.tool_call_id, None)
        if decision is None:
            return _refusal(fail_closed({"tool": call.tool_name}, _UNDECIDED))
        parts = _parts(result)
        output, refusal = await self.guard.aoutput(call.tool_name, decision, parts)
        if refusal is not None:
            return _refusal(refusal)
        if output == parts:
            return result
        if isinstance(result, ToolReturn):
            return replace(result, return_value=output[0], content=output[1])
        return output[0]


def _parts(result: Any) -> list[Any]:
    """What the model may read of a result, as JSON: ``[value, content]``."""
    if isinstance(result, ToolReturn):
        return [to_jsonable_python(result.return_value), to_jsonable_python(result.content)]
    return [to_jsonable_python(result), None]


def _refusal(decision: Decision) -> ToolReturn:
    """The tool return that replaces a withheld result: the refusal line, the decision aside."""
    return ToolReturn(return_value=refusal_line(decision), metadata=decision.to_dict())
