"""Approvals over a journal: pending requests, answers, and the retry that uses a grant
(docs/design/approvals.md).

The journal is the only store: a request is its ``approval-required`` decision, an answer is a
signed ``refusalkit.approval-grant/v1`` or ``refusalkit.approval-denial/v1`` entry, and a grant
is used by the ``allow`` decision appended together with its one-time claim
(``Store.append_claiming``), in one transaction: of any number of concurrent retries, exactly one
appends the allow; the others are decided ``approval-required`` again, "already used".
Only answers signed by one of the keyring's signing keys count, so an entry written into the
store by anything without the keyring is ignored.
"""

from __future__ import annotations

import datetime as dt
import hmac
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from refusalkit.approvals._records import DENIAL_SCHEMA, GRANT_SCHEMA, Answer, AnswerKind
from refusalkit.approvals._rules import (
    answer_problem,
    claim_of,
    granted,
    make_answer,
    resolve,
    still_required,
)
from refusalkit.errors import ApprovalError, ClaimTakenError
from refusalkit.journal import Journal
from refusalkit.keyring import Keyring
from refusalkit.model import Decision, ReasonCode, format_timestamp, now_utc

__all__ = ["ApprovalBook", "ApprovalCheck", "PendingRequest", "needs_settling"]

_CODE = ReasonCode.APPROVAL_REQUIRED.value


def needs_settling(decision: Decision) -> bool:
    """Whether a decision is a request for approval, which a grant may turn into an allow."""
    return decision.approval is not None and decision.reason_code is ReasonCode.APPROVAL_REQUIRED


def _digest(decision: Decision) -> str | None:
    return decision.approval.action_digest if decision.approval is not None else None


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request for approval that no one has answered and that has not lapsed."""

    index: int
    decision: Decision
    asked: int  # how many requests for the same action are in the journal

    def to_dict(self) -> dict[str, Any]:
        """What ``approvals list`` and ``GET /v1/approvals`` show: never an unredacted value."""
        approval = self.decision.approval
        assert approval is not None
        return {
            "request_id": approval.request_id,
            "journal_index": self.index,
            "tool": approval.tool,
            "agent": self.decision.subject.agent,
            "session": self.decision.subject.session,
            "rule": self.decision.matched_rule,
            "message": self.decision.message,
            "args": dict(approval.args or {}),
            "action_digest": approval.action_digest,
            "policy": self.decision.policy.digest,
            "asked_at": self.decision.decided_at,
            "expires_at": approval.expires_at,
            "asked": self.asked,
        }


@dataclass(frozen=True, slots=True)
class ApprovalCheck:
    """Whether a call waits for a person before it may run: the answer to a framework's approval
    question (``needs_approval``, ``interrupt``), which uses up no grant.

    ``required``: the pack asks for approval and no valid, unused grant covers the exact action.
    ``request`` / ``journal_index``: the pending request for approval a person answers (its
    ``approval.request_id``), when there is one. ``grant_index``: the grant the call would use.
    ``problem``: why no grant applies (or why the check could not be made).
    """

    required: bool
    request: Decision | None = None
    journal_index: int | None = None
    grant_index: int | None = None
    problem: str = ""

    @property
    def request_id(self) -> str | None:
        """The id a person grants or denies (``approvals grant STORE REQUEST_ID``)."""
        approval = self.request.approval if self.request is not None else None
        return approval.request_id if approval is not None else None

    def to_dict(self) -> dict[str, Any]:
        """What a framework's pause shows the person: never an unredacted value."""
        out: dict[str, Any] = {"required": self.required, "problem": self.problem}
        if self.request is not None and self.journal_index is not None:
            out["request"] = PendingRequest(self.journal_index, self.request, 1).to_dict()
        if self.grant_index is not None:
            out["grant_index"] = self.grant_index
        return out


class ApprovalBook:
    """Approval requests and answers in one journal, answered and signed with one keyring."""

    def __init__(self, journal: Journal, keyring: Keyring) -> None:
        self.journal = journal
        self._keyring = keyring
        self._trusted = [keyring.public_key_bytes(kid) for kid in keyring.signing_keys]

    # reading ----------------------------------------------------------------------------

    def requests(self, *, since: str | None = None) -> Iterator[tuple[int, Decision]]:
        """Every request for approval in the journal (from ``since``) that a decision point
        holding this keyring made (its seal verifies), oldest first."""
        for index, record in self.journal.query(reason_code=_CODE, since=since):
            try:
                decision = Decision.from_dict(record)
            except (KeyError, TypeError, ValueError):
                continue
            if needs_settling(decision) and self._sealed(decision):
                yield index, decision

    def _sealed(self, decision: Decision) -> bool:
        """Whether the request's ``seal`` is this keyring's HMAC over what it shows."""
        approval = decision.approval
        if approval is None or approval.seal is None or approval.seal.count(":") != 2:
            return False
        key_id = approval.seal.split(":")[1]
        if key_id not in self._keyring.redaction_keys:
            return False
        body = approval.sealed_body(decision.subject.agent, decision.policy.digest)
        expected = self._keyring.redactor(key_id).digest(body)
        return hmac.compare_digest(expected, approval.seal)

    def find(self, request_id: str) -> tuple[int, Decision]:
        """The request with this id (its journal index and decision)."""
        for index, decision in self.requests():
            if decision.approval is not None and decision.approval.request_id == request_id:
                return index, decision
        raise ApprovalError(f"no request for approval has the id {request_id!r}")

    def answers(self, agent: str | None = None) -> list[tuple[int, Answer]]:
        """Every answer that verifies under the keyring (for ``agent``'s requests, when given)."""
        found: list[tuple[int, Answer]] = []
        for schema in (GRANT_SCHEMA, DENIAL_SCHEMA):
            for index, record in self.journal.query(schema=schema, agent=agent):
                answer = self._verified(record)
                if answer is not None and (agent is None or answer.subject.agent == agent):
                    found.append((index, answer))
        return sorted(found, key=lambda a: a[0])

    def _verified(self, record: Any) -> Answer | None:
        try:
            answer = Answer.from_dict(record)
        except (KeyError, TypeError, ValueError):
            return None
        return answer if any(answer.verify(key) for key in self._trusted) else None

    def pending(self, now: str | None = None) -> list[PendingRequest]:
        """Requests not answered and not lapsed, the newest of each action, oldest first."""
        moment = now or format_timestamp(now_utc())
        answered = {a.action_digest: i for i, a in self.answers()}
        latest: dict[str, tuple[int, Decision, int]] = {}
        for index, decision in self.requests():
            approval = decision.approval
            if approval is None or approval.expires_at < moment:
                continue
            if answered.get(approval.action_digest, -1) > index:
                continue
            count = latest[approval.action_digest][2] + 1 if approval.action_digest in latest else 1
            latest[approval.action_digest] = (index, decision, count)
        rows = sorted(latest.values(), key=lambda r: r[0])
        return [PendingRequest(index, decision, count) for index, decision, count in rows]

    # answering --------------------------------------------------------------------------

    def answer(
        self,
        kind: AnswerKind,
        request_id: str,
        approver: str,
        *,
        ttl_s: int | None = None,
        reason: str | None = None,
        now: str | None = None,
    ) -> tuple[int, Answer]:
        """Record a grant or a denial of ``request_id``, signed; its journal index and record."""
        moment = now or format_timestamp(now_utc())
        index, request = self.find(request_id)
        earlier = [a for a in self.answers(request.subject.agent) if a[1].request_id == request_id]
        problem = answer_problem(request, approver, moment, earlier[-1] if earlier else None)
        if problem is not None:
            raise ApprovalError(problem[0], hint=problem[1])
        expires = self._grant_expiry(request, moment, ttl_s) if kind is AnswerKind.GRANT else None
        record = make_answer(
            kind, request, index, approver, moment, expires_at=expires, reason=reason
        ).signed(self._keyring.signing_key())
        [at] = self.journal.append([record.to_dict()])
        return at, record

    @staticmethod
    def _grant_expiry(request: Decision, now: str, ttl_s: int | None) -> str:
        """A grant lasts the rule's ``ttl`` from now, or less when the approver says so."""
        approval = request.approval
        assert approval is not None
        allowed = int((_parse(approval.expires_at) - _parse(request.decided_at)).total_seconds())
        if ttl_s is not None and not 0 < ttl_s <= allowed:
            raise ApprovalError(
                f"--ttl must be between 1 s and the rule's ttl ({allowed} s)",
                hint="Give a shorter ttl, or leave it out to use the rule's.",
            )
        return format_timestamp(_parse(now) + dt.timedelta(seconds=ttl_s or allowed))

    # the retry --------------------------------------------------------------------------

    def settle(self, decision: Decision, now: str | None = None) -> tuple[Decision, Sequence[str]]:
        """The decision to journal for a request for approval, and the claims to append it with:
        an allow and its grant's claim when a grant applies, else the request with the reason."""
        if not needs_settling(decision):
            return decision, ()
        moment = now or format_timestamp(now_utc())
        answers = self.answers(decision.subject.agent)
        claims = [claim_of(i) for i, a in answers if a.kind is AnswerKind.GRANT]
        used = self.journal.store.claimed(claims)
        grant, problem = resolve(decision, answers, used, moment)
        if grant is None:
            return still_required(decision, problem), ()
        return granted(decision, *grant), (claim_of(grant[0]),)

    def check(self, decision: Decision, now: str | None = None) -> ApprovalCheck:
        """Whether ``decision``'s call needs a person now, without using a grant or journaling
        anything: the question a framework asks before the call is decided."""
        if not needs_settling(decision):
            return ApprovalCheck(required=False)
        moment = now or format_timestamp(now_utc())
        answers = self.answers(decision.subject.agent)
        claims = [claim_of(i) for i, a in answers if a.kind is AnswerKind.GRANT]
        grant, problem = resolve(decision, answers, self.journal.store.claimed(claims), moment)
        if grant is not None:
            return ApprovalCheck(required=False, grant_index=grant[0])
        approval = decision.approval
        assert approval is not None  # needs_settling
        digest = approval.action_digest
        waiting = [p for p in self.pending(moment) if _digest(p.decision) == digest]
        if not waiting:
            return ApprovalCheck(required=True, problem=problem)
        last = waiting[-1]
        return ApprovalCheck(required=True, request=last.decision, journal_index=last.index,
                             problem=problem)  # fmt: skip

    def ask(self, decision: Decision, now: str | None = None) -> ApprovalCheck:
        """``check``, and when a person must answer and no request for the same action is
        pending, journal ``decision`` as the request they answer (no grant is used)."""
        found = self.check(decision, now)
        if not found.required or found.request is not None:
            return found
        asked = still_required(decision, found.problem)
        [index] = self.journal.append([asked.to_dict()])
        return ApprovalCheck(required=True, request=asked, journal_index=index,
                             problem=found.problem)  # fmt: skip

    def append_settled(self, decision: Decision, now: str | None = None) -> tuple[Decision, int]:
        """Settle ``decision`` and journal the result; a grant that another retry used first
        (the claim was taken) leaves this one ``approval-required``, "already used"."""
        settled, claims = self.settle(decision, now)
        if not claims:
            return settled, self.journal.append([settled.to_dict()])[0]
        try:
            return settled, self.journal.append_claiming([settled.to_dict()], claims)[0]
        except ClaimTakenError as taken:
            problem = f"the grant was already used by the decision at journal index {taken.index}"
            again = still_required(decision, problem)
            return again, self.journal.append([again.to_dict()])[0]
