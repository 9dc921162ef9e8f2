"""Golden test: reason codes version 1 are wire identifiers (docs/design/decision.md).

``tests/vectors/reason-codes-v1.json`` pins each code's spelling, meaning, retryability and hint.
This test fails if an existing code changes any of them; a new code needs a new version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refusalkit.model import REASON_CODES_VERSION, Action, Decision, ReasonCode

GOLDEN = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "reason-codes-v1.json").read_text(
        encoding="utf-8"
    )
)


def test_version_and_closed_set() -> None:
    assert GOLDEN["reason_codes_version"] == REASON_CODES_VERSION == 1
    assert [row["code"] for row in GOLDEN["codes"]] == [code.value for code in ReasonCode]
    assert GOLDEN["actions"] == [action.value for action in Action]


@pytest.mark.parametrize("row", GOLDEN["codes"], ids=lambda row: row["code"])
def test_each_code_keeps_its_meaning(row: dict[str, Any]) -> None:
    code = ReasonCode(row["code"])  # spelling
    assert code.meaning == row["meaning"]
    assert code.retryable is row["retryable"]
    assert code.retry == row["retry"]
    assert code.hint == row["hint"]


@pytest.mark.parametrize("row", GOLDEN["codes"], ids=lambda row: row["code"])
def test_retryable_on_the_wire_follows_the_code(row: dict[str, Any]) -> None:
    wire = {
        "schema": "refusalkit.decision/v1",
        "decision_id": "01890000-0000-7000-8000-000000000000",
        "action": "deny",
        "reason_code": row["code"],
        "matched_rule": "r",
        "message": None,
        "why_trail": [],
        "policy": {"id": "p", "version": "1", "digest": "sha256:" + "0" * 64},
        "engine": {"name": "refusalkit", "version": "0"},
        "subject": {"agent": None, "session": None},
        "request_digest": "hmac-sha256:k1:" + "0" * 64,
        "decided_at": "2026-01-01T00:00:00.000Z",
    }
    assert Decision.from_dict(wire).to_dict()["retryable"] is row["retryable"]
