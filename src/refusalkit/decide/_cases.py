"""A pack's own test cases, run like ``opa test`` (``refusalkit policy test PACK CASES``).

A case file is a YAML (or JSON) list; each case has a ``name``, the request (``request``: an
object, or ``line``: raw JSONL text, for malformed input) and what to ``expect``: ``action`` and,
optionally, ``reason_code`` and ``matched_rule``. Only the keys given are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refusalkit._internal.source import read_pack_source
from refusalkit.decide._engine import DecisionPoint
from refusalkit.model import Decision

__all__ = ["EXPECT_KEYS", "Case", "CaseResult", "load_cases", "run_cases"]

EXPECT_KEYS = ("action", "reason_code", "matched_rule")


@dataclass(frozen=True, slots=True)
class Case:
    """One test case: a request (object or raw line) and the expected outcome."""

    name: str
    expect: Mapping[str, Any]
    request: Any = None
    line: str | None = None
    source_line: int | None = None


@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case and what the decision point said; ``diff`` lists (key, expected, actual)."""

    case: Case
    decision: Decision
    diff: tuple[tuple[str, Any, Any], ...] = field(default=())

    @property
    def passed(self) -> bool:
        """True when every expected key matched."""
        return not self.diff


def _case(index: int, raw: Any, lines: Any) -> Case:
    where = (index,)
    if not isinstance(raw, dict):
        raise lines.error("a case is a map with name, request (or line) and expect", where)
    expect = raw.get("expect")
    if not isinstance(expect, dict) or "action" not in expect:
        raise lines.error("`expect` must be a map with at least `action`", (*where, "expect"))
    unknown = set(expect) - set(EXPECT_KEYS)
    if unknown:
        raise lines.error(f"unknown expect key {sorted(unknown)[0]!r}", (*where, "expect"))
    if ("request" in raw) == ("line" in raw):
        raise lines.error("give exactly one of `request` and `line`", where)
    line = raw.get("line")
    if line is not None and not isinstance(line, str):
        raise lines.error("`line` is the raw text of one JSONL line", (*where, "line"))
    name = str(raw.get("name", f"case {index + 1}"))
    return Case(name, expect, raw.get("request"), line, lines.line(where))


def load_cases(path: str | Path) -> list[Case]:
    """Read a case file; raises ``PolicyError`` naming the file, line and key at fault."""
    data, lines = read_pack_source(path, what="cases file")
    if not isinstance(data, list):
        raise lines.error("a case file is a list of cases")
    return [_case(i, raw, lines) for i, raw in enumerate(data)]


def _compare(case: Case, decision: Decision) -> tuple[tuple[str, Any, Any], ...]:
    actual = {
        "action": decision.action.value,
        "reason_code": decision.reason_code.value if decision.reason_code else None,
        "matched_rule": decision.matched_rule,
    }
    return tuple(
        (key, case.expect[key], actual[key])
        for key in EXPECT_KEYS
        if key in case.expect and case.expect[key] != actual[key]
    )


def run_cases(dp: DecisionPoint, cases: Iterable[Case]) -> list[CaseResult]:
    """Decide every case and compare with its expectation."""
    results = []
    for case in cases:
        if case.line is not None:
            decision = dp.decide_line(case.line, line_number=case.source_line)
        else:
            decision = dp.decide(case.request)
        results.append(CaseResult(case, decision, _compare(case, decision)))
    return results
