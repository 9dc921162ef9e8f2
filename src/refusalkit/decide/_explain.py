"""Readable why-trails (``refusalkit decide --explain``) and streaming JSONL decisions.

The text shows exactly what the Decision holds (values stay redaction tokens), one step a line,
with the decisive step marked ``→``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from refusalkit.decide._engine import DecisionPoint
from refusalkit.model import Decision, WhyStep

__all__ = ["decide_lines", "explain"]


def _outcome(step: WhyStep) -> str:
    if step.missing and step.matched:
        return "unknown→matched"
    if step.missing:
        return "unknown"
    return "matched" if step.matched else "no match"


def _step_line(number: int, step: WhyStep) -> str:
    mark = "→" if step.decisive else " "
    what = ""
    if step.field is not None:
        cls = f" [{step.field_class}]" if step.field_class else ""
        what = f"{step.field}{cls}"
        if step.value is not None:
            what += f" = {step.value}"
        elif step.missing:
            what += " (absent)"
    parts = [f"{mark} {number:>2}  {step.rule:<26} {step.effect:<6} {_outcome(step):<15}"]
    if what:
        parts.append(what)
    if step.test:
        parts.append(f"test: {step.test}")
    if step.detail:
        parts.append(f"({step.detail})")
    return "  ".join(parts).rstrip()


def explain(decision: Decision, *, label: str | None = None) -> str:
    """A readable, multi-line rendering of a decision and its why-trail."""
    head = decision.action.value.upper()
    if decision.reason_code is not None:
        head += f" {decision.reason_code.value}"
    head += f" by {decision.matched_rule}"
    if label:
        head = f"{label}: {head}"
    lines = [head]
    if decision.message:
        lines.append(f"  message: {decision.message}")
    retry = "yes" if decision.retryable else "no"
    who = decision.subject.agent or "?"
    lines.append(f"  agent: {who}  session: {decision.subject.session or '?'}  retryable: {retry}")
    lines.extend(_step_line(i, step) for i, step in enumerate(decision.why_trail, 1))
    return "\n".join(lines)


def decide_lines(dp: DecisionPoint, lines: Iterable[str | bytes]) -> Iterator[tuple[int, Decision]]:
    """Decide a JSONL stream lazily: ``(line number, decision)`` per non-blank line."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        yield number, dp.decide_line(line, line_number=number)
