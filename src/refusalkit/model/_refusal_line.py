"""The one line a model reads when a tool call is refused (docs/design/mcp.md, Refusal line).

``refused (<reason-code> by <rule>, retryable: yes|no): <message>`` — the reason code and the
decisive rule are wire identifiers the model (or its harness) can act on; the message is the pack
author's text, or the reason code's meaning when the rule has none. One line: any line break in
the message is folded to a space, so the line cannot smuggle a second instruction-looking line.
"""

from __future__ import annotations

from refusalkit.model._decision import Decision

__all__ = ["refusal_line"]


def refusal_line(decision: Decision) -> str:
    """The refusal line of a refusing decision; raises ``ValueError`` for allow/audit."""
    code = decision.reason_code
    if code is None:
        raise ValueError(f"an {decision.action} decision is not a refusal")
    message = " ".join((decision.message or "").split()) or code.meaning
    retryable = "yes" if decision.retryable else "no"
    return f"refused ({code.value} by {decision.matched_rule}, retryable: {retryable}): {message}"
