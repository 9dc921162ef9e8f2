"""The refusal line a model reads: one line, reason code, rule, retryability, message."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    refusal_line,
)


def _decision(action: Action, code: ReasonCode | None, rule: str, message: str | None) -> Decision:
    return Decision(
        "d-1", action, code, rule, message, (), PolicyRef("p", "v1", "sha256:00"),
        EngineRef("refusalkit", "0"), Subject("coder", "s-1"), "hmac-sha256:k1:00",
        "2026-01-01T00:00:00Z",
    )  # fmt: skip


def test_the_documented_form() -> None:
    decision = _decision(
        Action.DENY, ReasonCode.POLICY_DENIED, "sensitive_path", "Credential files are off limits."
    )
    assert refusal_line(decision) == (
        "refused (policy-denied by sensitive_path, retryable: no): Credential files are off limits."
    )


def test_unavailable_is_retryable() -> None:
    decision = _decision(Action.DENY, ReasonCode.UNAVAILABLE, "@unavailable", "try later")
    line = refusal_line(decision)
    assert line == "refused (unavailable by @unavailable, retryable: yes): try later"


@pytest.mark.parametrize("message", [None, "", " \n "])
def test_a_rule_without_message_gets_the_codes_meaning(message: str | None) -> None:
    decision = _decision(Action.BLOCK, ReasonCode.OUT_OF_SCOPE, "@scope", message)
    assert refusal_line(decision).endswith("): " + ReasonCode.OUT_OF_SCOPE.meaning)


def test_allow_is_not_a_refusal() -> None:
    with pytest.raises(ValueError, match="not a refusal"):
        refusal_line(_decision(Action.ALLOW, None, "ok", None))


@given(st.text())
def test_always_one_line(message: str) -> None:
    line = refusal_line(_decision(Action.DENY, ReasonCode.INPUT_REJECTED, "f", message))
    assert len(line.splitlines()) == 1
    assert line.startswith("refused (input-rejected by f, retryable: no): ")
