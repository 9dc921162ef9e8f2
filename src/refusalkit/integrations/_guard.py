"""What every framework integration shares: build the request, ask the enforcer, never raise.

The request for a tool call is ``{"tool": name, "args": args, "caller": caller()}``, or what
``to_request(name, args)`` maps it to (``caller`` is added unless the mapping has one). A
``caller`` or ``to_request`` that raises, or arguments that are not a JSON object, decide the
call ``deny`` + ``unavailable``: the tool does not run (docs/design/client.md, fail closed).

After an allowed tool ran, its output goes through ``output`` / ``aoutput``: the enforcer's
``ResultChecker`` (the MCP gateway's path: the chat guard's scanner, the pack's result filters,
a journaled record of what was found) gives the output the model may see, or the refusal that
replaces it. A result filter's match taints the session, and every later request of it carries
``context: {"session": {"tainted", "taint"}}``, so a pack's rules can refuse destructive tools
after a poisoned result. ``results`` is ``redact`` (default), ``block`` or ``off``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from refusalkit.approvals import ApprovalCheck
from refusalkit.enforce import (
    Enforcer,
    LocalEnforcer,
    ResultChecker,
    ResultMode,
    ToolBlockedError,
    fail_closed,
)
from refusalkit.model import Action, Decision

__all__ = ["CallerSource", "ToRequest", "ToolGuard", "json_args", "refused"]

CallerSource = Callable[[], Mapping[str, Any]]
"""The current run's ``{"agent", "session", "token"}`` (any may be absent)."""

ToRequest = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
"""Maps a framework's tool name and arguments to a request."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a key appears twice in the tool's arguments")
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_args(text: str | None) -> dict[str, Any]:
    """Tool arguments sent as JSON text (as OpenAI-style models do); ``ValueError`` for text that
    is not strict JSON, ``TypeError`` for JSON that is not an object (empty text is no arguments).

    A key given twice is refused rather than resolved: the decision point and the tool's own
    parser might each keep a different one of the two values (RFC 8259 §4 leaves it open), and
    a prompt-injected model could then get one value approved and the other run.
    """
    if not text:
        return {}
    value = json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)
    if not isinstance(value, dict):
        raise TypeError(f"tool arguments are a JSON {type(value).__name__}, not an object")
    return value


class ToolGuard:
    """Decides one framework tool call at a time through an ``Enforcer``; never raises."""

    __slots__ = ("_caller", "_to_request", "checker", "enforcer", "results")

    def __init__(
        self,
        enforcer: Enforcer,
        caller: CallerSource | None = None,
        to_request: ToRequest | None = None,
        *,
        results: ResultMode | str = ResultMode.REDACT,
    ) -> None:
        self.enforcer = enforcer
        self._caller = caller
        self._to_request = to_request
        self.results = ResultMode(results)
        self.checker = (
            enforcer.results if isinstance(enforcer, LocalEnforcer) else ResultChecker.unjournaled()
        )

    def request(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The request of one tool call (raises what ``caller`` or ``to_request`` raise)."""
        if self._to_request is not None:
            request = dict(self._to_request(tool, args))
        else:
            request = {"tool": tool, "args": args}
        if "caller" not in request:
            request["caller"] = dict(self._caller()) if self._caller is not None else {}
        session = request["caller"].get("session")
        request["context"] = {**request.get("context", {}), **self.checker.context(session)}
        return request

    def approval(self, tool: str, args: Any) -> ApprovalCheck:
        """Whether the call waits for a person (``LocalEnforcer.approval``: no grant is used).
        A call whose request cannot be made, or an enforcer that cannot check here (the
        service's ``Client``: its refusal names the request to answer), is not paused: its
        decision refuses it."""
        request = self._build(tool, args)
        if isinstance(request, Decision) or not isinstance(self.enforcer, LocalEnforcer):
            return ApprovalCheck(required=False, problem="no approval check: the call is decided")
        return self.enforcer.approval(request)

    def output(self, tool: str, decision: Decision, output: Any) -> tuple[Any, Decision | None]:
        """The tool's output as the model may see it, or the refusal that replaces it."""
        return self.checker.check(tool, decision, output, self.results)

    async def aoutput(
        self, tool: str, decision: Decision, output: Any
    ) -> tuple[Any, Decision | None]:
        """``output`` for async frameworks (the journal's write runs off the loop)."""
        return await asyncio.to_thread(self.checker.check, tool, decision, output, self.results)

    def _build(self, tool: str, args: Any) -> dict[str, Any] | Decision:
        if not isinstance(args, Mapping):
            problem = f"the tool's arguments are not an object ({type(args).__name__})"
            return fail_closed({"tool": tool}, problem)
        try:
            return self.request(tool, args)
        except Exception as exc:  # noqa: BLE001 (fail closed: a request that cannot be made)
            problem = f"the tool call's request could not be made ({type(exc).__name__})"
            return fail_closed({"tool": tool}, problem)

    def decide(self, tool: str, args: Any) -> Decision:
        """The decision on calling ``tool`` with ``args``."""
        request = self._build(tool, args)
        if isinstance(request, Decision):
            return request
        try:
            return _checked(self.enforcer.decide(request))
        except Exception as exc:  # noqa: BLE001 (fail closed: an enforcer that broke its promise)
            return _broken(request, exc)

    async def adecide(self, tool: str, args: Any) -> Decision:
        """``decide`` for async frameworks."""
        request = self._build(tool, args)
        if isinstance(request, Decision):
            return request
        try:
            return _checked(await self.enforcer.adecide(request))
        except Exception as exc:  # noqa: BLE001 (fail closed: an enforcer that broke its promise)
            return _broken(request, exc)


def _checked(decision: Any) -> Decision:
    if not isinstance(decision, Decision):
        raise TypeError(f"the enforcer answered a {type(decision).__name__}, not a Decision")
    return decision


def _broken(request: Mapping[str, Any], exc: Exception) -> Decision:
    """An enforcer of the user's own that raised or answered nonsense: refuse (only the error's
    type is kept; its message might quote the request)."""
    return fail_closed(request, f"the enforcer failed ({type(exc).__name__})")


def refused(decision: Decision) -> bool:
    """True when the tool must not run; raises ``ToolBlockedError`` for a ``block``."""
    if decision.action is Action.BLOCK:
        raise ToolBlockedError(decision)
    return decision.action is Action.DENY
