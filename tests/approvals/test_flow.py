"""The approval flow over a real journal, on SQLite and PostgreSQL: request, answer, retry."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from refusalkit.approvals import GRANT_SCHEMA, Answer, AnswerKind, ApprovalBook
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import ApprovalError
from refusalkit.examples import example_path
from refusalkit.journal import Journal, open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode, format_timestamp

Push = Callable[..., dict[str, Any]]


def _ask(book: ApprovalBook, point: DecisionPoint, request: dict[str, Any]) -> tuple[Decision, int]:
    return book.append_settled(point.decide(request))


def _later(text: str, seconds: int) -> str:
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return format_timestamp(moment + dt.timedelta(seconds=seconds))


def _why(decision: Decision) -> str:
    step = decision.why_trail[-1]
    assert step.rule == "@approval"
    return step.detail or ""


def test_request_grant_retry_allows_once(
    book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, index = _ask(book, point, push())
    assert (asked.action, asked.reason_code) == (Action.DENY, ReasonCode.APPROVAL_REQUIRED)
    assert asked.retryable
    assert asked.reason_codes_version == 2
    assert asked.approval is not None
    assert asked.approval.request_id == asked.decision_id
    assert "no approver has answered" in _why(asked)
    [pending] = book.pending()
    assert pending.index == index
    shown = pending.to_dict()
    assert (shown["tool"], shown["agent"], shown["rule"]) == (
        "git.push",
        "release-bot",
        "push_release_tag",
    )
    assert shown["args"]["ref"] == "refs/tags/v1.2.0"  # a revealed class
    assert shown["args"]["remote"].startswith("<redacted:hmac-sha256:")  # everything else is not

    grant_index, grant = book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    assert grant.request_index == index
    assert book.pending() == []

    allowed, allow_index = _ask(book, point, push())
    assert allowed.action is Action.ALLOW
    assert allowed.matched_rule == "push_release_tag"
    step = allowed.why_trail[-1]
    assert step.rule == "@approval"
    assert f"journal index {grant_index}" in (step.test or "")
    assert "approved by alice" in (step.detail or "")
    assert allowed.approval is not None
    assert allowed.approval.grant_index == grant_index

    replay, _ = _ask(book, point, push())
    assert replay.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert f"already used by the decision at journal index {allow_index}" in _why(replay)
    book.journal.verify()


def test_changed_arguments_are_a_new_request(
    book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    other, _ = _ask(book, point, push(ref="refs/tags/v9.9.9"))
    assert other.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert "arguments differ" in _why(other)
    assert "new request" in _why(other)
    assert [p.decision.decision_id for p in book.pending()] == [other.decision_id]
    # the grant still waits for its own action
    assert _ask(book, point, push())[0].action is Action.ALLOW


def test_another_agent_cannot_use_the_grant(
    book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    stranger = {**push(), "caller": {"agent": "intruder"}}
    assert _ask(book, point, stranger)[0].action is Action.DENY


def test_a_grant_does_not_outlive_its_pack(
    book: ApprovalBook, point: DecisionPoint, push: Push, ring: Keyring, tmp_path: Path
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    text = example_path("release-approvals.yaml").read_text().replace("version: v1", "version: v2")
    (tmp_path / "v2.yaml").write_text(text)
    reloaded = DecisionPoint(load_pack(tmp_path / "v2.yaml"), ring)
    after, _ = _ask(book, reloaded, push())
    assert after.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert "the pack changed since the grant" in _why(after)


def test_an_expired_grant_is_refused(book: ApprovalBook, point: DecisionPoint, push: Push) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    grant_index, grant = book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice", ttl_s=60)
    assert grant.expires_at is not None
    late, _ = book.append_settled(point.decide(push()), now=_later(grant.expires_at, 1))
    assert late.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert f"grant at journal index {grant_index} expired" in _why(late)


def test_a_denied_request_stays_refused(
    book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    denial_index, _ = book.answer(
        AnswerKind.DENIAL, asked.approval.request_id, "bob", reason="freeze until Monday"
    )
    again, _ = _ask(book, point, push())
    assert again.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert f"refused by bob at journal index {denial_index}: freeze until Monday" in _why(again)
    with pytest.raises(ApprovalError, match="already answered"):
        book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")


@pytest.mark.parametrize("approver", ["release-bot", "Release-Bot ", ""])
def test_the_agent_cannot_approve_itself(
    book: ApprovalBook, point: DecisionPoint, push: Push, approver: str
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    with pytest.raises(ApprovalError):
        book.answer(AnswerKind.GRANT, asked.approval.request_id, approver)
    assert _ask(book, point, push())[0].action is Action.DENY


def test_lapsed_requests_and_long_grants_are_refused(
    book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    rid = asked.approval.request_id
    with pytest.raises(ApprovalError, match="rule's ttl"):
        book.answer(AnswerKind.GRANT, rid, "alice", ttl_s=901)
    with pytest.raises(ApprovalError, match="lapsed"):
        book.answer(AnswerKind.GRANT, rid, "alice", now=_later(asked.approval.expires_at, 1))
    with pytest.raises(ApprovalError, match="no request for approval"):
        book.answer(AnswerKind.GRANT, "not-an-id", "alice")
    assert book.pending(now=_later(asked.approval.expires_at, 1)) == []


def test_a_grant_written_without_the_keyring_is_ignored(
    book: ApprovalBook, journal: Journal, point: DecisionPoint, push: Push
) -> None:
    """Someone who can append to the store but lacks the keyring forges a grant: unsigned, and
    signed with a key of their own. Neither counts."""
    asked, index = _ask(book, point, push())
    assert asked.approval is not None
    forged = Answer(
        kind=AnswerKind.GRANT,
        answer_id="forged",
        request_id=asked.approval.request_id,
        request_index=index,
        action_digest=asked.approval.action_digest,
        policy_digest=asked.policy.digest,
        tool="git.push",
        rule=asked.matched_rule,
        subject=asked.subject,
        approver="alice",
        at=asked.decided_at,
        expires_at=asked.approval.expires_at,
    )
    journal.append([forged.to_dict(), forged.signed(Keyring.generate().signing_key()).to_dict()])
    assert [s for _, s in journal.query(schema=GRANT_SCHEMA)]
    assert book.answers() == []
    assert _ask(book, point, push())[0].action is Action.DENY


def test_eight_concurrent_retries_of_one_grant_allow_exactly_once(
    store_url: str, ring: Keyring, book: ApprovalBook, point: DecisionPoint, push: Push
) -> None:
    asked, _ = _ask(book, point, push())
    assert asked.approval is not None
    book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    start = threading.Barrier(8)
    results: list[Decision] = []
    errors: list[BaseException] = []

    def retry() -> None:
        try:
            with open_journal(store_url, ring) as own:  # each its own connection
                retried = ApprovalBook(own, ring)
                decision = point.decide(push())
                start.wait()
                results.append(retried.append_settled(decision)[0])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=retry) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    actions = sorted(d.action.value for d in results)
    assert actions == ["allow"] + ["deny"] * 7
    assert all("already used" in _why(d) for d in results if d.action is Action.DENY)
    journaled = [Decision.from_dict(r) for _, r in book.journal.query(action="allow")]
    assert len(journaled) == 1
    book.journal.verify()


def test_answers_are_signed_and_linked_for_an_examiner(
    book: ApprovalBook, journal: Journal, point: DecisionPoint, push: Push, ring: Keyring
) -> None:
    asked, index = _ask(book, point, push())
    assert asked.approval is not None
    grant_index, _ = book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
    _allowed, allow_index = _ask(book, point, push())
    records = dict(journal.query())
    grant = Answer.from_dict(records[grant_index])
    assert grant.verify(ring.public_key_bytes())
    assert not grant.verify(Keyring.generate().public_key_bytes())
    request = Decision.from_dict(records[grant.request_index])
    assert request.approval is not None
    assert grant.request_index == index
    assert grant.action_digest == request.approval.action_digest
    used = Decision.from_dict(records[allow_index])
    assert used.approval is not None
    assert used.approval.grant_index == grant_index
    assert used.approval.action_digest == grant.action_digest
    tampered = Answer.from_dict({**records[grant_index], "approver": "mallory"})
    assert not tampered.verify(ring.public_key_bytes())


def test_a_request_written_without_the_keyring_cannot_be_answered(
    book: ApprovalBook, journal: Journal, point: DecisionPoint, push: Push
) -> None:
    """Someone who can append to the store writes a request that shows harmless arguments but
    carries the digest of another action: it is not listed, and granting it is refused."""
    real = point.decide(push(ref="refs/tags/evil"))
    shown = point.decide(push())
    assert real.approval is not None
    assert shown.approval is not None
    forged = replace(
        shown, approval=replace(shown.approval, action_digest=real.approval.action_digest)
    )
    journal.append([forged.to_dict()])
    assert book.pending() == []
    with pytest.raises(ApprovalError, match="no request for approval"):
        book.answer(AnswerKind.GRANT, shown.approval.request_id, "alice")
    journal.append([shown.to_dict()])  # the genuine request, as the decision point sealed it
    assert [p.decision.decision_id for p in book.pending()] == [shown.decision_id]
