"""Turn events and refusal decisions in the journal verify with their receipts."""

from __future__ import annotations

from pathlib import Path

import pytest

from refusalkit.chat import ChatRuntime, ToolCall
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import VerificationError
from refusalkit.examples import example_path
from refusalkit.journal import open_journal, verify_receipt
from refusalkit.keyring import Keyring


def test_journaled_turn_events_verify_with_receipts(tmp_path: Path, keyring: Keyring) -> None:
    dp = DecisionPoint(load_pack(example_path("chat-tool-policy.json")), keyring)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        runtime = ChatRuntime(journal=journal, keyring=keyring, decision_point=dp, agent="a1")
        plain = runtime.check("hi", "Hello!")
        refused = runtime.check("key?", "It is AKIAQ3EGRT5WZ7XK2LMN")
        tool = runtime.check("env", "Done.", [ToolCall("fs.write", {"path": "/workspace/.env"})])
        events = list(journal.query(schema="refusalkit.turn-event/v1"))
        assert [i for i, _ in events] == [
            plain.journal_index,
            refused.journal_index,
            tool.journal_index,
        ]
        for index, record in events:
            receipt = journal.receipt(index)
            verify_receipt(record, receipt, public_key=keyring.public_key_bytes())
        decisions = {r["decision_id"]: r for _, r in journal.query(schema="refusalkit.decision/v1")}
        assert refused.decision is not None
        assert decisions[refused.decision.decision_id]["matched_rule"] == (
            "safety:no_secret_disclosure"
        )
        tool_decision_ids = [
            d["decision_id"]
            for r in tool.safety_verdict.results
            if r.id == "no_unauthorized_action"
            for d in r.evidence["decisions"]
        ]
        assert all(i in decisions for i in tool_decision_ids)
        denied = list(journal.query(matched_rule="safety:no_secret_disclosure"))
        assert len(denied) == 1
        sessions = {r["subject"]["session"] for _, r in journal.query(session=runtime.session)}
        assert sessions == {runtime.session}
        index, record = events[1]
        forged = {**record, "selected": "articulation"}
        with pytest.raises(VerificationError):
            verify_receipt(forged, journal.receipt(index), public_key=keyring.public_key_bytes())
