"""The local enforcer behind every framework integration honours grants: the refusal line names
the request, and after a grant the same tool call is allowed once."""

from __future__ import annotations

import re
from pathlib import Path

import anyio

from refusalkit.approvals import AnswerKind, ApprovalBook
from refusalkit.enforce import enforcer
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
