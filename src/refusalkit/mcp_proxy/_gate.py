"""The gate: one MCP ``tools/call`` in, one journaled decision out (docs/design/mcp.md).

A call becomes a request ``{"tool": "<server>.<tool>", "args": ..., "caller": {...}}``, is decided
by the pack's ``DecisionPoint`` and appended to the journal before the proxy forwards or refuses
it. Any failure on this path (the journal cannot take the decision, the deadline passes, a bug)
gives ``deny`` + ``unavailable``: the call is never passed through on an error.

A ``block`` decision blocks the MCP session: every later call in it is refused by the same rule,
each refusal decided (a one-step why-trail naming the blocking decision) and journaled.

With pins (``--pin``), a call of a tool whose definition differs from its pin, or that is not
pinned, is refused ``deny`` + ``out-of-scope`` by ``@pin`` before the pack is asked. Results
(``check``) pass the scanner and the pack's result filters; a result with findings is journaled
(``refusalkit.mcp-result/v1``), and a result filter's match taints the session, which the next
requests carry as ``context.session``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol, TextIO, TypeVar

import anyio

from refusalkit._internal.failclosed import failed_decision, safe_digest
from refusalkit._internal.results import (
    RESULT_SCHEMA,
    SessionTaint,
    record_fields,
    result_action,
    result_record,
    withheld,
)
from refusalkit._version import __version__
from refusalkit.approvals import ApprovalBook, needs_settling
from refusalkit.decide import DecisionEncoder, DecisionPoint
from refusalkit.journal import Journal, decision_fields
from refusalkit.keyring import Keyring
from refusalkit.mcp_proxy._loop import asyncio_loop
from refusalkit.mcp_proxy._pins import PinSet
from refusalkit.mcp_proxy._results import Checked, ResultMode, check_result
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    ReasonCode,
    Subject,
    WhyStep,
    canonical_json,
    format_timestamp,
    now_utc,
    uuid7,
)

__all__ = ["RESULT_SCHEMA", "Appender", "Caller", "Checked", "Gate", "GateOutcome"]

T = TypeVar("T")
log = logging.getLogger("refusalkit.mcp")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

_UNAVAILABLE_MESSAGE = "The decision could not be rendered or journaled; the call was not made."
_SHADOW_TEST = "shadow mode: decided and journaled, not enforced (the call was forwarded)"
_PIN_TEST = "the tool's definition matches its pin"
_PIN_MESSAGE = (
    "The tool is not offered: {problem}. Review the change with `refusalkit mcp pin review` "
    "and accept it with `refusalkit mcp pin accept`."
)
_RESULT_FAILED = "The result could not be checked or journaled; it was withheld."


class Appender(Protocol):
    """Where decisions go: group-committed appends (``refusalkit.journal.JournalAccess``)."""

    async def append(self, records: list[tuple[bytes, tuple[str | None, ...]]]) -> list[int]:
        """Append encoded records; their indices once durable."""
        ...

    async def write(self, fn: Callable[[Journal], T]) -> T:
        """Run ``fn`` on the writer's connection (checkpoint signing)."""
        ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls, as the request's ``caller`` names it (docs/design/mcp.md, Request mapping)."""

    agent: str | None
    session: str
    token: str | None = None

    def to_dict(self) -> dict[str, str]:
        """The request's ``caller`` object; absent members are left out, not null."""
        out = {"session": self.session}
        if self.agent is not None:
            out["agent"] = self.agent
        if self.token is not None:
            out["token"] = self.token
        return out


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """A journaled decision on one call, and whether the proxy refuses the call."""

    decision: Decision
    journal_index: int | None
    refused: bool


@dataclass(frozen=True, slots=True)
class _Block:
    decision: Decision
    journal_index: int | None


class Gate:
    """Decides and journals ``tools/call`` requests for one proxy (every session it serves).

    ``shadow`` forwards every call that could be decided and journaled, and marks each decision
    with a non-decisive ``@shadow`` step so the journal says it was not enforced.
    """

    def __init__(
        self,
        point: DecisionPoint,
        journal: Appender,
        keyring: Keyring,
        *,
        server_name: str,
        shadow: bool = False,
        timeout_s: float = 5.0,
        report: TextIO | None = None,
        pins: PinSet | None = None,
        results: ResultMode = ResultMode.REDACT,
    ) -> None:
        self.point = point
        self.pins = pins
        self.results = results
        self.server_name = server_name
        self.shadow = shadow
        self._journal = journal
        self._redactor = keyring.redactor()
        self._keyring = keyring
        self._encoder = DecisionEncoder()
        self._timeout_s = timeout_s
        self._blocked: dict[str, _Block] = {}
        self._report = report if report is not None else sys.stderr
        self.would_refuse = 0
        self._engine = EngineRef("refusalkit", __version__)
        self._appended = 0
        self._checkpointed = 0
        self._taint = SessionTaint()
        self._warned: set[str | None] = set()

    def tool_id(self, tool: str) -> str:
        """The request's tool: ``<server-name>.<tool>``."""
        return f"{self.server_name}.{tool}"

    def offers(self, tool: str, agent: str | None) -> bool:
        """Whether ``tools/list`` shows ``tool`` to ``agent``: the pack's capabilities grant it,
        and some rule (or the default) could allow it (docs/design/mcp.md, Listing)."""
        name = self.tool_id(tool)
        pack = self.point.pack
        return pack.grants(agent, name) and pack.may_allow(name)

    def offers_resource(self, uri: Any, caller: Caller) -> bool:
        """Whether ``resources/list`` shows the resource at ``uri``: reading it would be allowed
        now (decided, not journaled: nothing is read)."""
        request = self.request("resources/read", {"uri": uri}, caller)
        return not self.point.decide(request).action.refuses

    def note_listing(self, agent: str | None, listed: int, offered: int) -> None:
        """Warn once per agent when a server lists tools and none is offered to the agent."""
        if listed == 0 or offered > 0 or agent in self._warned:
            return
        self._warned.add(agent)
        who = "no --agent" if agent is None else f"agent {agent!r}"
        print(
            f"refusalkit: warning: the server lists {listed} tool(s) and the pack grants none of "
            f"them to {who} as {self.server_name}.<tool> (--server-name {self.server_name}); "
            "every call will be refused. Check --server-name, --agent and the pack's capabilities.",
            file=self._report,
            flush=True,
        )

    def taint(self, session: str) -> tuple[str, ...]:
        """The result filters that matched in ``session`` so far, in order."""
        return self._taint.of(session)

    def request(self, tool: Any, arguments: Any, caller: Caller) -> dict[str, Any]:
        """The decision request of a call (docs/design/mcp.md, Request mapping).

        A call without a string name, or whose arguments are not an object, maps to a malformed
        request as it is: the decision point decides it ``deny`` + ``input-rejected`` by
        ``@request`` (docs/design/decision.md), and that decision is journaled like any other.
        """
        name = self.tool_id(tool) if isinstance(tool, str) else tool
        args = {} if arguments is None else arguments
        context = self._taint.context(caller.session)
        return {"tool": name, "args": args, "caller": caller.to_dict(), "context": context}

    async def decide(
        self, tool: Any, arguments: Any, caller: Caller, *, pinned: bool = True
    ) -> GateOutcome:
        """Decide and journal one call. Never raises: a failure is a refusing verdict.

        ``pinned``: the call is of a server tool, which the pins (if any) must cover.
        """
        request: Any = None
        try:
            request = self.request(tool, arguments, caller)
            problem = None
            if pinned and self.pins is not None and isinstance(tool, str):
                problem = self.pins.problem(caller.session, tool)
            async with _deadline(self._timeout_s):
                return await self._decide(request, caller, problem)
        except Exception as exc:  # noqa: BLE001 (fail closed: any error refuses the call)
            problem = self._problem(exc)
            return GateOutcome(self._unavailable(request, caller, problem), None, refused=True)

    def _problem(self, exc: Exception) -> str:
        """What the refusal says went wrong: the kind of failure only. The message may name the
        store (a URL with a password) and the model reads the refusal; stderr gets it whole."""
        log.warning("a tools/call failed closed: %s: %s", type(exc).__name__, exc)
        if isinstance(exc, TimeoutError):
            return f"no journaled decision within {self._timeout_s * 1000:g} ms"
        return f"the decision path failed ({type(exc).__name__})"

    async def _decide(
        self, request: Mapping[str, Any], caller: Caller, pin_problem: str | None
    ) -> GateOutcome:
        block = self._blocked.get(caller.session)
        if block is not None:
            decision = self._still_blocked(request, caller, block)
        elif pin_problem is not None:
            decision = self._unpinned(request, caller, pin_problem)
        else:
            decision = self.point.decide(request)
        if self.shadow:
            decision = _shadowed(decision)
        elif decision.action is Action.BLOCK and block is None:
            self._blocked[caller.session] = _Block(decision, None)  # before journaling: fail closed
        if needs_settling(decision) and not self.shadow:  # a grant may let it run, once
            asked, ring = decision, self._keyring
            decision, index = await self._journal.write(
                lambda journal: ApprovalBook(journal, ring).append_settled(asked)
            )
        else:
            entry = (self._encoder.encode(decision), decision_fields(decision))
            [index] = await self._journal.append([entry])
        self._appended += 1
        if decision.action is Action.BLOCK and block is None and not self.shadow:
            self._blocked[caller.session] = _Block(decision, index)
        refused = decision.action.refuses and not self.shadow
        if self.shadow and decision.action.refuses:
            self._tell_shadow(request, decision, index)
        return GateOutcome(decision, index, refused=refused)

    def end_session(self, session: str) -> None:
        """Forget a session that ended (its block and taint: the id is never reused)."""
        self._blocked.pop(session, None)
        self._taint.end(session)
        if self.pins is not None:
            self.pins.end_session(session)

    # -- results ------------------------------------------------------------------------------

    async def check(
        self, method: str, tool: str, call: GateOutcome, result: Any, caller: Caller
    ) -> tuple[dict[str, Any] | None, GateOutcome | None]:
        """A server's result (of ``tools/call``, ``resources/read``, ``prompts/get``) as the
        client may see it, or the refusal that replaces it. Never raises: a failure withholds
        the result."""
        try:
            return await self._check(method, tool, call, result, caller)
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing unchecked is passed on)
            problem = self._problem(exc)
            decision = self._unavailable(None, caller, problem, message=_RESULT_FAILED)
            return None, GateOutcome(decision, None, refused=True)

    async def _check(
        self, method: str, tool: str, call: GateOutcome, result: Any, caller: Caller
    ) -> tuple[dict[str, Any] | None, GateOutcome | None]:
        if not isinstance(result, dict):
            raise TypeError("the result is not an object")
        scan = self.results is not ResultMode.OFF
        checked = check_result(method, result, self._redactor, self.point.pack.result_filter_hits,
                               scan=scan)  # fmt: skip
        self._taint.add(caller.session, checked.taint)
        if not checked.findings and not checked.taint:
            return result, None
        action = result_action(self.results, checked, shadow=self.shadow)
        subject = Subject(caller.agent, caller.session)
        record = result_record(method=method, tool=self.tool_id(tool), call=call.decision,
                               journal_index=call.journal_index, checked=checked,
                               subject=subject, action=action)  # fmt: skip
        entries = [(canonical_json(record), record_fields(record))]
        refusal = self._withheld(tool, checked, subject) if action == "block" else None
        if refusal is not None:
            entries.append((self._encoder.encode(refusal), decision_fields(refusal)))
        async with _deadline(self._timeout_s):  # the only wait: a clean result has none
            indices = await self._journal.append(entries)
        self._appended += len(entries)
        if refusal is not None:
            return None, GateOutcome(refusal, indices[-1], refused=True)
        return (result if self.shadow else checked.result), None

    def _withheld(self, tool: str, checked: Checked, subject: Subject) -> Decision:
        """The refusal that replaces a result with findings under ``--results block``."""
        digest = self._digest(self.tool_id(tool))
        return withheld(checked, policy=self.point.pack.ref, engine=self._engine,
                        subject=subject, digest=digest)  # fmt: skip

    async def checkpoint(self) -> None:
        """Sign a checkpoint over what this gate appended, if anything is new (best effort: a
        failure leaves the entries durable, covered by the next checkpoint)."""
        if self._appended == self._checkpointed:
            return
        appended = self._appended
        try:
            await self._journal.write(lambda journal: journal.checkpoint())
        except Exception as exc:  # noqa: BLE001 (the decisions are durable without it)
            print(f"refusalkit: no checkpoint signed: {exc}", file=self._report, flush=True)
            return
        self._checkpointed = appended

    def _tell_shadow(self, request: Mapping[str, Any], decision: Decision, index: int) -> None:
        self.would_refuse += 1
        code = decision.reason_code.value if decision.reason_code else "-"
        tool = _printable(request["tool"])
        print(
            f"refusalkit shadow: would {decision.action.value} {tool} ({code} by "
            f"{decision.matched_rule}), journal index {index}; forwarded",
            file=self._report,
            flush=True,
        )

    def _digest(self, request: Any) -> str:
        return safe_digest(self._redactor.digest, request)

    def _still_blocked(self, request: Any, caller: Caller, block: _Block) -> Decision:
        first = block.decision
        where = "" if block.journal_index is None else f" at journal index {block.journal_index}"
        step = WhyStep(
            first.matched_rule,
            "block",
            matched=True,
            decisive=True,
            test=f"the session was blocked by decision {first.decision_id}{where}",
        )
        return Decision(
            uuid7(), Action.BLOCK, first.reason_code, first.matched_rule, first.message,
            (step,), first.policy, self._engine, Subject(caller.agent, caller.session),
            self._digest(request), format_timestamp(now_utc()),
        )  # fmt: skip

    def _unpinned(self, request: Any, caller: Caller, problem: str) -> Decision:
        """``deny`` + ``out-of-scope`` by ``@pin``: the tool differs from its pin, or has none."""
        step = WhyStep("@pin", "deny", matched=True, decisive=True, field="tool",
                       field_class="unclassified", value=_text(request.get("tool")),
                       test=_PIN_TEST, detail=problem)  # fmt: skip
        return Decision(
            uuid7(), Action.DENY, ReasonCode.OUT_OF_SCOPE, "@pin",
            _PIN_MESSAGE.format(problem=problem), (step,), self.point.pack.ref, self._engine,
            Subject(caller.agent, caller.session), self._digest(request),
            format_timestamp(now_utc()),
        )  # fmt: skip

    def _unavailable(
        self, request: Any, caller: Caller, problem: str, *, message: str = _UNAVAILABLE_MESSAGE
    ) -> Decision:
        return failed_decision(
            test="the decision path answered",
            problem=problem,
            message=message,
            policy=self.point.pack.ref,
            engine=self._engine,
            subject=Subject(caller.agent, caller.session),
            request_digest=self._digest(request),
        )


class _AnyioDeadline:
    """``anyio.fail_after`` as an asynchronous context manager, for an event loop other than
    asyncio (trio)."""

    def __init__(self, seconds: float) -> None:
        self._scope = anyio.fail_after(seconds)

    async def __aenter__(self) -> None:
        self._scope.__enter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return self._scope.__exit__(*exc)


def _deadline(seconds: float) -> AbstractAsyncContextManager[object]:
    """A deadline on what is awaited inside: ``TimeoutError`` when it passes. On asyncio its own
    ``timeout`` (half the CPU of anyio's ``fail_after``, which every call paid)."""
    if asyncio_loop() is None:  # another event loop (trio)
        return _AnyioDeadline(seconds)
    return asyncio.timeout(seconds)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _printable(text: str) -> str:
    """``text`` for a log line: control characters escaped, so a tool name chosen by the client
    cannot forge lines (or terminal escapes) in the operator's log."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _shadowed(decision: Decision) -> Decision:
    """The decision with a non-decisive ``@shadow`` step: journaled as not enforced."""
    effect = decision.action.value
    step = WhyStep("@shadow", effect, matched=True, decisive=False, test=_SHADOW_TEST)
    return replace(decision, why_trail=(*decision.why_trail, step))
