"""Golden test: reason codes are wire identifiers (docs/design/reason-codes.md).

``tests/vectors/reason-codes-v1.json`` pins each version 1 code's spelling, meaning, retryability
and hint; ``reason-codes-v2.json`` pins version 2, which must contain version 1 unchanged (codes
are added, never changed). A new code needs a new version and a new golden file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refusalkit.model import REASON_CODES_VERSION, Action, Decision, ReasonCode

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
GOLDEN_V1 = json.loads((VECTORS / "reason-codes-v1.json").read_text(encoding="utf-8"))
GOLDEN = json.loads((VECTORS / "reason-codes-v2.json").read_text(encoding="utf-8"))
ALL_ROWS = list(GOLDEN["codes"])


def test_version_and_closed_set() -> None:
    assert GOLDEN["reason_codes_version"] == REASON_CODES_VERSION == 2
    assert [row["code"] for row in GOLDEN["codes"]] == [code.value for code in ReasonCode]
    assert GOLDEN["actions"] == GOLDEN_V1["actions"] == [action.value for action in Action]


def test_version_2_keeps_version_1_unchanged() -> None:
    assert GOLDEN_V1["reason_codes_version"] == 1
    v1_rows = [{k: v for k, v in row.items() if k != "since"} for row in GOLDEN["codes"][:5]]
    assert v1_rows == GOLDEN_V1["codes"]
    assert [row["since"] for row in GOLDEN["codes"]] == [1, 1, 1, 1, 1, 2, 2]


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda row: row["code"])
def test_each_code_keeps_its_meaning(row: dict[str, Any]) -> None:
    code = ReasonCode(row["code"])  # spelling
    assert code.meaning == row["meaning"]
    assert code.retryable is row["retryable"]
    assert code.retry == row["retry"]
    assert code.hint == row["hint"]
    assert code.since == row["since"]


def _wire(code: str, version: int | None) -> dict[str, Any]:
    wire = {
        "schema": "refusalkit.decision/v1",
        "decision_id": "01890000-0000-7000-8000-000000000000",
        "action": "deny",
        "reason_code": code,
        "matched_rule": "r",
        "message": None,
        "why_trail": [],
        "policy": {"id": "p", "version": "1", "digest": "sha256:" + "0" * 64},
        "engine": {"name": "refusalkit", "version": "0"},
        "subject": {"agent": None, "session": None},
        "request_digest": "hmac-sha256:k1:" + "0" * 64,
        "decided_at": "2026-01-01T00:00:00.000Z",
    }
    if version is not None:
        wire["reason_codes_version"] = version
    return wire


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda row: row["code"])
def test_retryable_on_the_wire_follows_the_code(row: dict[str, Any]) -> None:
    decision = Decision.from_dict(_wire(row["code"], row["since"]))
    assert decision.to_dict()["retryable"] is row["retryable"]
    assert decision.reason_codes_version == row["since"]


def test_a_record_cannot_claim_version_1_for_a_version_2_code() -> None:
    """A version 1 reader must never meet a code it does not know under version 1."""
    for code in ("approval-required", "rate-limited"):
        with pytest.raises(ValueError, match="version 2 reason code"):
            Decision.from_dict(_wire(code, 1))
        with pytest.raises(ValueError, match="version 2 reason code"):
            Decision.from_dict(_wire(code, None))  # absent means version 1


def test_version_1_records_still_say_version_1() -> None:
    assert Decision.from_dict(_wire("policy-denied", None)).to_dict()["reason_codes_version"] == 1
