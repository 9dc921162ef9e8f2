"""PydanticAI: ``RefusalCapability``, a capability that decides every tool call before it runs.

``Agent(model, tools=[...], capabilities=[RefusalCapability(enforcer, caller=...)])``: each
call is decided on its validated arguments in ``before_tool_execute``, after every other
capability's (it orders itself innermost), so just before the tool runs. On ``deny`` the tool
does not run and the model reads the refusal line as the tool's return (the decision's wire
form rides in ``ToolReturn.metadata``, which the model does not see); a retryable code
(``attestation-failed``, ``unavailable``) raises ``ModelRetry`` with the line instead, so the
model may call again; on ``block`` the run ends with ``ToolBlockedError`` carrying the decision.
Install with ``pip install 'refusalkit[pydantic-ai]'``.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, RunContext, ToolReturn
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import CapabilityOrdering, ValidatedToolArgs
from pydantic_ai.exceptions import SkipToolExecution
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from refusalkit.enforce import Enforcer
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, refused
from refusalkit.model import refusal_line

__all__ = ["RefusalCapability"]


@dataclass
class RefusalCapability(AbstractCapability[Any]):
    """Decides each tool call before it runs (see the module docstring)."""

    enforcer: Enforcer
    _: KW_ONLY
    caller: CallerSource | None = None
    to_request: ToRequest | None = None
    id: str | None = "refusalkit"
    guard: ToolGuard = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.guard = ToolGuard(self.enforcer, self.caller, self.to_request)

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
            return args
        line = refusal_line(decision)
        if decision.retryable:
            raise ModelRetry(line)
        raise SkipToolExecution(ToolReturn(return_value=line, metadata=decision.to_dict()))
