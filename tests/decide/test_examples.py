"""The bundled example: a realistic pack, ≥ 40 requests covering every reason code, and the
case file of their expected decisions (run exactly as ``refusalkit policy test`` runs it)."""

from __future__ import annotations

import json

from refusalkit.decide import DecisionPoint, load_cases, load_pack, run_cases
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode


def test_every_case_passes(keyring: Keyring) -> None:
    dp = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring, deadline_ms=10_000)
    results = run_cases(dp, load_cases(example_path("agent-tools.cases.yaml")))
    failures = [(r.case.name, r.diff) for r in results if not r.passed]
    assert failures == []
    assert len(results) >= 40


def test_cases_cover_every_request_and_every_code() -> None:
    cases = load_cases(example_path("agent-tools.cases.yaml"))
    lines = example_path("requests.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(cases) >= 40
    for line, case in zip(lines, cases, strict=True):
        if case.line is not None:
            assert line == case.line
        else:
            assert json.loads(line) == case.request
        assert {"action", "reason_code", "matched_rule"} <= set(case.expect)
    codes = {case.expect["reason_code"] for case in cases}
    native = (code.value for code in ReasonCode if code.since == 1)  # v2 codes: engines only
    assert codes == {None, *native}
    actions = {case.expect["action"] for case in cases}
    assert actions == {a.value for a in Action}


def test_expired_and_forged_tokens_are_in_the_requests() -> None:
    cases = load_cases(example_path("agent-tools.cases.yaml"))
    names = " ".join(c.name for c in cases if c.expect["reason_code"] == "attestation-failed")
    for word in ("expired", "forged", "no attestation token", "another agent"):
        assert word in names
