"""What a predicate sees (a turn) and what it says (a result), and the verdicts of both packs.

docs/design/chat.md: each predicate returns ``{id, upheld, runtime_checkable, evidence}``;
``runtime_checkable=False`` means "no evidence either way" and never refuses. Evidence is
log-safe by construction: kinds, spans, counts, decision ids, never the turn's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from refusalkit.chat._untrusted import Parsed, clean_text, json_problem, parse_arguments
from refusalkit.model import Decision, PolicyRef

__all__ = [
    "EthicsVerdict",
    "LastRefusal",
    "Memory",
    "PredicateResult",
    "SafetyVerdict",
    "ToolCall",
    "Turn",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the responder proposes: tool name and arguments (as in a decide request).

    ``problem`` says why the arguments cannot be checked (not finite, too deep, not JSON; see
    ``refusalkit.chat._untrusted``); such a call is denied ``unavailable``, never evaluated, and
    its arguments are not kept."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    problem: str | None = None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> ToolCall:
        """From ``{"tool", "args"}`` or an OpenAI ``{"function": {"name", "arguments"}}``."""
        if isinstance(obj.get("function"), Mapping):
            return cls.from_openai(obj)
        tool = obj.get("tool", obj.get("name"))
        return cls._made(tool, parse_arguments(obj.get("args", obj.get("arguments", {}))), None)

    @classmethod
    def from_openai(cls, obj: Mapping[str, Any]) -> ToolCall:
        """An OpenAI ``tool_calls`` item; arguments that are not a JSON object stay as ``_raw``."""
        fn = obj.get("function")
        fn = fn if isinstance(fn, Mapping) else {}
        ident = obj.get("id")
        ident = clean_text(ident) if ident is not None else None
        return cls._made(fn.get("name"), parse_arguments(fn.get("arguments") or "{}"), ident)

    @classmethod
    def _made(cls, tool: Any, parsed: Parsed, ident: str | None) -> ToolCall:
        if parsed.problem is not None:
            return cls(clean_text(tool), {}, ident, parsed.problem)
        args = parsed.value
        return cls(
            clean_text(tool), dict(args) if isinstance(args, Mapping) else {"_raw": args}, ident
        )

    def vetted(self) -> ToolCall:
        """This call as the guard checks it: a valid tool name, and either checkable arguments or
        none at all (with the ``problem`` that says why)."""
        if self.problem is not None:
            return (
                self
                if not self.args
                else ToolCall(clean_text(self.tool), {}, self.id, self.problem)
            )
        args: Any = self.args
        problem = (
            json_problem(args) if isinstance(args, Mapping) else "arguments that are not an object"
        )
        tool = clean_text(self.tool)
        ident = clean_text(self.id) if self.id is not None else None
        if problem is None and tool == self.tool and ident == self.id:
            return self
        return ToolCall(tool, {} if problem else args, ident, problem)

    def to_dict(self) -> dict[str, Any]:
        """Wire form (``problem`` only when the arguments could not be checked)."""
        out: dict[str, Any] = {"tool": self.tool, "args": dict(self.args), "id": self.id}
        if self.problem is not None:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True, slots=True)
class LastRefusal:
    """The runtime's memory of its last refusal: which turn, and whether it was typed."""

    turn: int
    typed: bool


@dataclass(frozen=True, slots=True)
class Memory:
    """What the runtime remembers between turns (kept in process, never serialised whole)."""

    last_refusal: LastRefusal | None = None
    user_supplied: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn as the predicates see it. ``tool_decisions`` are the decision point's answers to
    ``tool_calls`` (``None`` when no decision point is configured); ``tool_decision_error`` names
    a decision point that failed (the turn then fails closed)."""

    index: int
    input: str
    articulation: str
    tool_calls: tuple[ToolCall, ...] = ()
    memory: Memory = Memory()
    session: str | None = None
    agent: str | None = None
    tool_decisions: tuple[Decision, ...] | None = None
    tool_decision_error: str | None = None


@dataclass(frozen=True, slots=True)
class PredicateResult:
    """One predicate's answer (docs/design/chat.md). ``evidence`` is JSON and log-safe."""

    id: str
    upheld: bool
    runtime_checkable: bool
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def checked(cls, ident: str, upheld: bool, evidence: Mapping[str, Any]) -> PredicateResult:
        """A runtime-checkable result."""
        return cls(ident, upheld=upheld, runtime_checkable=True, evidence=evidence)

    @classmethod
    def unchecked(cls, ident: str, evidence: Mapping[str, Any]) -> PredicateResult:
        """No evidence either way: never refuses (``upheld`` is vacuously true)."""
        return cls(ident, upheld=True, runtime_checkable=False, evidence=evidence)

    @property
    def violated(self) -> bool:
        """Only a runtime-checkable predicate that is not upheld is a violation."""
        return self.runtime_checkable and not self.upheld

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {
            "id": self.id,
            "upheld": self.upheld,
            "runtime_checkable": self.runtime_checkable,
            "evidence": dict(self.evidence),
        }


def _results_dict(results: tuple[PredicateResult, ...]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in results]


@dataclass(frozen=True, slots=True)
class SafetyVerdict:
    """The five safety boundaries' results for one attempt, and the pack that defined them."""

    pack: PolicyRef
    results: tuple[PredicateResult, ...]

    @property
    def violations(self) -> tuple[str, ...]:
        """Ids of the runtime-checkable boundaries that were violated, in pack order."""
        return tuple(r.id for r in self.results if r.violated)

    @property
    def upheld(self) -> bool:
        """True when no checkable boundary was violated."""
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {
            "pack": self.pack.to_dict(),
            "upheld": self.upheld,
            "results": _results_dict(self.results),
        }


@dataclass(frozen=True, slots=True)
class EthicsVerdict:
    """The ethics commitments' results, with the pack's refusal and hedge opt-ins."""

    pack: PolicyRef
    results: tuple[PredicateResult, ...]
    refusal_commitments: frozenset[str] = frozenset()
    hedge_commitments: frozenset[str] = frozenset()

    @property
    def violations(self) -> tuple[str, ...]:
        """Ids of every violated commitment (refusing, hedging or merely recorded)."""
        return tuple(r.id for r in self.results if r.violated)

    @property
    def refusing(self) -> tuple[str, ...]:
        """Violated commitments that the pack lists in ``refusal_commitments``."""
        return tuple(i for i in self.violations if i in self.refusal_commitments)

    @property
    def hedging(self) -> tuple[str, ...]:
        """Violated commitments that the pack lists in ``hedge_commitments``."""
        return tuple(i for i in self.violations if i in self.hedge_commitments)

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {
            "pack": self.pack.to_dict(),
            "violations": list(self.violations),
            "refusing": list(self.refusing),
            "hedging": list(self.hedging),
            "results": _results_dict(self.results),
        }
