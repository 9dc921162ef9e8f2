"""The one line a model reads when a tool call is refused (docs/design/decision.md).

``refused (<reason-code> by <rule>, retryable: yes|no): <message>`` — the same line wherever a
refusal reaches a model: the framework integrations and the MCP proxy. A request for approval
ends with `` [approval request <id>]``, the id an approver answers (docs/approvals.md). One
line, always: the message and the rule id come from a policy pack, so line breaks and other
control characters in them are folded to spaces (a pack author cannot forge a second line the
model would read as a separate instruction or tool result).
"""

from __future__ import annotations

import re

from refusalkit.model._decision import Decision

__all__ = ["refusal_line"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")


def _one_line(text: str) -> str:
    return _CONTROL.sub(" ", text).strip()


def refusal_line(decision: Decision) -> str:
    """The refusal line of a ``deny`` or ``block`` decision; ``ValueError`` for one that allows.

    The message is the decision's own, or the reason code's meaning when the rule gave none.
    """
    code = decision.reason_code
    if code is None or not decision.action.refuses:
        raise ValueError(f"an {decision.action.value} decision is not a refusal")
    message = _one_line(decision.message or code.meaning) or code.meaning
    rule = _one_line(decision.matched_rule)
    retry = "yes" if code.retryable else "no"
    line = f"refused ({code.value} by {rule}, retryable: {retry}): {message}"
    if decision.approval is not None and code.value == "approval-required":
        line += f" [approval request {_one_line(decision.approval.request_id)}]"
    return line
