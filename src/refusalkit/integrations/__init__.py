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

from refusalkit._deprecated import moved as _moved
from refusalkit.integrations._guard import CallerSource, ToolGuard, ToRequest, json_args

__all__ = ["CallerSource", "ToRequest", "ToolGuard", "json_args"]

# Renamed so that each public name has one meaning (docs/design/architecture.md, Names);
# importable, with a DeprecationWarning, until 0.3 (CHANGELOG.md).
__getattr__ = _moved(
    __name__,
    {
        "Caller": ("refusalkit.integrations", "CallerSource"),
    },
)
