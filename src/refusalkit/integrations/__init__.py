"""Framework integrations: every tool call an agent makes is decided first (docs/integrations.md).

Each lives in its own module and optional extra, so importing this package needs no framework:

- ``refusalkit.integrations.langchain.RefusalMiddleware`` (``refusalkit[langchain]``)
- ``refusalkit.integrations.openai_agents.refusal_guardrail`` (``refusalkit[openai-agents]``)
- ``refusalkit.integrations.pydantic_ai.RefusalCapability`` (``refusalkit[pydantic-ai]``)

Each takes an ``Enforcer`` (``refusalkit.enforcer(...)`` or ``refusalkit.client.Client``), a
``caller`` callable giving the run's ``{"agent", "session", "token"}`` and an optional
``to_request``. A ``deny`` returns ``refusal_line(decision)`` to the model and the tool never
runs; a ``block`` ends the run with ``refusalkit.enforce.ToolBlockedError`` carrying the
decision.
"""

from refusalkit.integrations._guard import Caller, ToolGuard, ToRequest, json_args

__all__ = ["Caller", "ToRequest", "ToolGuard", "json_args"]
