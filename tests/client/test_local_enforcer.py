"""``refusalkit.enforcer``: the local ``Enforcer``, journaling each decision or failing closed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import refusalkit
from refusalkit.enforce import Enforcer, ToolBlockedError
from refusalkit.errors import UsageError
from refusalkit.journal import open_journal
from refusalkit.model import Action, ReasonCode, refusal_line
from support.live_service import tools_deployment


def _req(tool: str) -> dict[str, object]:
    return {"tool": tool, "args": {}, "caller": {"agent": "a"}}


def test_decides_and_journals_every_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    store = tmp_path / "local.db"
    with refusalkit.enforcer(policy=d.pack, journal=store, keyring=d.keyring_path) as enforcer:
        assert isinstance(enforcer, Enforcer)
        denied = enforcer.decide(_req("delete_file"))
        audited = asyncio.run(enforcer.adecide(_req("send_email")))
    assert (denied.action, audited.action) == (Action.DENY, Action.AUDIT)
    with open_journal(store, d.keyring, create=False) as journal:
        ids = [r["decision_id"] for _, r in journal.query(schema="refusalkit.decision/v1")]
        assert ids == [denied.decision_id, audited.decision_id]
        journal.checkpoint()
        assert journal.verify().size == 2


def test_a_decision_the_journal_cannot_take_is_refused(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    enforcer = refusalkit.enforcer(policy=d.pack, journal=tmp_path / "j.db", keyring=d.keyring)
    enforcer.close()  # the store is gone: every append fails
    decision = enforcer.decide(_req("read_file"))
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "journal cannot take" in (decision.why_trail[-1].detail or "")


def test_a_journal_needs_its_keyring(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    with pytest.raises(UsageError, match="keyring"):
        refusalkit.enforcer(policy=d.pack, journal=tmp_path / "j.db")


def test_a_block_is_a_typed_error_carrying_the_decision(tmp_path: Path) -> None:
    d = tools_deployment(tmp_path)
    decision = refusalkit.enforcer(policy=d.pack).decide(_req("wipe_disk"))
    error = ToolBlockedError(decision)
    assert error.decision is decision
    assert str(error) == refusal_line(decision)
    assert isinstance(error, refusalkit.RefusalkitError)
