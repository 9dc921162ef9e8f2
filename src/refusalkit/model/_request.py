"""The request an agent sends before a tool call (docs/design/policy.md, Request).

``parse_request`` checks the shape that the contract calls well-formed and raises
``RequestError`` otherwise; a decision point answers such a request ``deny`` + ``unavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from refusalkit.errors import RequestError

__all__ = ["Request", "parse_request"]


@dataclass(frozen=True, slots=True)
class Request:
    """A tool call to decide: ``tool``, its ``args``, who calls (``caller``), the user's ``input``.

    ``raw`` is the whole request object, so rules can test any dotted field path.
    """

    tool: str
    args: Mapping[str, Any]
    caller: Mapping[str, Any]
    input: str | None
    raw: Mapping[str, Any]

    @property
    def agent(self) -> str | None:
        """``caller.agent`` when it is a string."""
        agent = self.caller.get("agent")
        return agent if isinstance(agent, str) else None

    @property
    def session(self) -> str | None:
        """``caller.session`` when it is a string."""
        session = self.caller.get("session")
        return session if isinstance(session, str) else None


def parse_request(obj: Any) -> Request:
    """Check and wrap one request object; raises ``RequestError`` naming the problem."""
    if not isinstance(obj, Mapping):
        raise RequestError(f"a request must be a JSON object, not {type(obj).__name__}")
    tool = obj.get("tool")
    if tool is None:
        raise RequestError("the request has no `tool`")
    if not isinstance(tool, str):
        raise RequestError(f"`tool` must be a string, not {type(tool).__name__}")
    args = obj.get("args", {})
    caller = obj.get("caller", {})
    for name, value in (("args", args), ("caller", caller)):
        if not isinstance(value, Mapping):
            raise RequestError(f"`{name}` must be an object, not {type(value).__name__}")
    text = obj.get("input")
    return Request(tool, args, caller, text if isinstance(text, str) else None, obj)
