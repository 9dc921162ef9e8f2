"""The local enforcer behind every framework integration honours grants: the refusal line names
the request, and after a grant the same tool call is allowed once."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from refusalkit.approvals import AnswerKind, ApprovalBook
from refusalkit.enforce import enforcer
from refusalkit.errors import ApprovalError
from refusalkit.examples import example_path
from refusalkit.integrations import ToolGuard
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import Action, refusal_line

ARGS = {"ref": "refs/tags/v3.0.0", "remote": "origin"}


def test_a_guarded_call_runs_once_after_a_grant(tmp_path: Path, keyring_path: Path) -> None:
    ring = Keyring.load(keyring_path)
    store = tmp_path / "j.db"
    policy = example_path("release-approvals.yaml")
    with enforcer(policy=policy, journal=store, keyring=keyring_path) as local:
        guard = ToolGuard(local, lambda: {"agent": "release-bot"})
        asked = anyio.run(guard.adecide, "git.push", ARGS)
        line = refusal_line(asked)
        match = re.search(r"\[approval request ([0-9a-f-]+)\]$", line)
        assert match is not None, line
        with open_journal(store, ring) as journal:
            ApprovalBook(journal, ring).answer(AnswerKind.GRANT, match.group(1), "alice")
        assert guard.decide("git.push", ARGS).action is Action.ALLOW
        assert guard.decide("git.push", ARGS).action is Action.DENY
        assert guard.decide("git.push", {**ARGS, "ref": "refs/tags/v4"}).action is Action.DENY


def test_without_the_keyring_no_grant_counts(tmp_path: Path, keyring_path: Path) -> None:
    from refusalkit.decide import DecisionPoint, load_pack  # noqa: PLC0415
    from refusalkit.enforce import LocalEnforcer  # noqa: PLC0415

    ring = Keyring.load(keyring_path)
    point = DecisionPoint(load_pack(example_path("release-approvals.yaml")), ring)
    request = {"tool": "git.push", "args": ARGS, "caller": {"agent": "release-bot"}}
    with open_journal(tmp_path / "j.db", ring) as journal:
        book = ApprovalBook(journal, ring)
        asked = LocalEnforcer(point, journal).decide(request)
        assert asked.approval is not None
        book.answer(AnswerKind.GRANT, asked.approval.request_id, "alice")
        assert LocalEnforcer(point, journal).decide(request).action is Action.DENY
        assert LocalEnforcer(point, journal, ring).decide(request).action is Action.ALLOW


def test_the_approval_question_uses_up_no_grant(tmp_path: Path, keyring_path: Path) -> None:
    """A framework asks "does this call need a person?" before the call is decided: asking
    journals the request once, never uses the grant; the call's own decision uses it, once."""
    request = {"tool": "git.push", "args": ARGS, "caller": {"agent": "release-bot"}}
    policy = example_path("release-approvals.yaml")
    with enforcer(policy=policy, journal=tmp_path / "j.db", keyring=keyring_path) as local:
        first, second = local.approval(request), local.approval(request)
        assert first.required
        assert second.required
        assert first.request_id is not None
        assert second.request_id == first.request_id
        assert second.journal_index == first.journal_index
        with pytest.raises(ApprovalError, match="cannot approve its own request"):
            local.answer(AnswerKind.GRANT, first.request_id, "release-bot")
        grant, _ = local.answer(AnswerKind.GRANT, first.request_id, "alice")
        for _ in range(3):
            check = local.approval(request)
            assert (check.required, check.grant_index) == (False, grant)
        assert local.decide(request).action is Action.ALLOW
        after = local.approval(request)
        assert after.required
        assert "already used" in after.problem
        assert local.decide(request).action is Action.DENY
        assert not local.approval({**request, "tool": "fs.read", "args": {"path": "a"}}).required


def test_an_approval_check_that_cannot_be_made_asks_a_person(keyring_path: Path) -> None:
    policy = example_path("release-approvals.yaml")
    with enforcer(policy=policy, keyring=keyring_path) as local:  # no journal: no grant can count
        check = local.approval({"tool": "git.push", "args": ARGS, "caller": {"agent": "bot"}})
    assert check.required
    assert "UsageError" in check.problem
