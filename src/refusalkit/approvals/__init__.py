"""Human approval bound to the exact action, journaled (docs/design/approvals.md).

A ``require-approval`` rule decides ``deny`` + ``approval-required`` with an ``approval`` object;
an approver answers with a signed grant or denial journaled beside it; the retried action with
the same action digest is ``allow`` once, while the grant is valid, its use claimed in the same
transaction that appends the allow.
"""

from __future__ import annotations

from refusalkit.approvals._book import ApprovalBook, ApprovalCheck, PendingRequest, needs_settling
from refusalkit.approvals._records import DENIAL_SCHEMA, GRANT_SCHEMA, Answer, AnswerKind
from refusalkit.approvals._rules import Resolution, answer_problem, claim_of, resolve

__all__ = [
    "DENIAL_SCHEMA",
    "GRANT_SCHEMA",
    "Answer",
    "AnswerKind",
    "ApprovalBook",
    "ApprovalCheck",
    "PendingRequest",
    "Resolution",
    "answer_problem",
    "claim_of",
    "needs_settling",
    "resolve",
]
