"""Drift that a judge's error cannot fake: constructed run pairs with known truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import CalibrationError
from refusalkit.provenance import (
    CalibrationRun,
    InconclusiveReason,
    JudgeAudit,
    JudgedResponse,
    JudgeRef,
    Refused,
    Verdict,
    compare,
    render_html,
)

N = 400
P = {Refused.YES: 0.97, Refused.NO: 0.05, Refused.UNCERTAIN: 0.4}


def run_of(
    labels: list[Refused], *, audit: JudgeAudit | None = None, model: str = "m"
) -> CalibrationRun:
    outcomes = tuple(
        JudgedResponse(f"p{i:04d}", "c", "comply", label, P[label], "test")  # type: ignore[arg-type]
        for i, label in enumerate(labels)
    )
    return CalibrationRun(
        run_id=f"run-{model}",
        model=model,
        endpoint=None,
        judge=JudgeRef("keyword", "2"),
        set_hash="sha256:x",
        set_name="constructed",
        sampling={},
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
        outcomes=outcomes,
        extra={} if audit is None else {"judge_audit": audit.to_dict()},
    )


def labels(yes: int, uncertain: int = 0) -> list[Refused]:
    return (
        [Refused.YES] * yes + [Refused.UNCERTAIN] * uncertain + [Refused.NO] * (N - yes - uncertain)
    )


def test_a_judge_style_gap_shown_as_uncertainty_is_inconclusive_judge() -> None:
    """200 of 400 truly refuse in both runs. The judge sees 186 at baseline; on the new model's
    style it is sure of 110 and unsure of 90. Read at its best guess, that is a 40% fall."""
    report = compare(run_of(labels(186)), run_of(labels(110, 90), model="m2"))
    assert report.verdict is Verdict.INCONCLUSIVE
    assert report.overall.reason is InconclusiveReason.JUDGE
    assert report.overall.why.startswith("judge: with the uncertain outcomes read against")
    assert report.exit_code == 4
    assert any("different reliability" in w for w in report.warnings)
    assert report.to_dict()["overall"]["reason"] == "judge"
    assert "judged with different reliability" in render_html(report.to_dict())


def test_a_true_change_the_judge_sees_fully_is_drift_in_the_right_direction() -> None:
    up = compare(run_of(labels(100)), run_of(labels(250), model="m2"))
    assert up.verdict is Verdict.MORE_RESTRICTIVE
    assert up.overall.reason is None
    down = compare(run_of(labels(250)), run_of(labels(100), model="m2"))
    assert down.verdict is Verdict.MORE_PERMISSIVE
    assert not down.warnings


def test_a_change_within_the_judges_error_rates_is_inconclusive_judge() -> None:
    """A 14% rise is beyond tolerance and significant, but the keyword judge's measured
    false-positive and recall intervals could produce it from no change."""
    report = compare(run_of(labels(140)), run_of(labels(160), model="m2"))
    assert report.verdict is Verdict.INCONCLUSIVE
    assert report.overall.reason is InconclusiveReason.JUDGE
    assert "error rates" in report.overall.why


def _audit(yes: int, no: int, missed_in_sample: int) -> JudgeAudit:
    """30 labelled from each stratum: every yes was a refusal; ``missed_in_sample`` of the 30
    no's were refusals the judge missed."""
    return JudgeAudit(
        labelled={"yes": (30, 30), "no": (missed_in_sample, 30)},
        strata={"yes": yes, "no": no},
    )


def test_audited_corrections_move_the_verdict_as_expected() -> None:
    """The judge silently misses the new model's refusals (said "no", not "uncertain"): 186
    judged at baseline, 110 now, where 200 truly refuse in both. Unaudited, that reads as drift.
    The audits find the misses (1 in 30 of the baseline's no's, 9 in 30 of the current's) and
    the corrected rates say there is no drift."""
    before, now = labels(186), labels(110)
    unaudited = compare(run_of(before), run_of(now, model="m2"))
    assert unaudited.verdict is Verdict.MORE_PERMISSIVE
    audited = compare(
        run_of(before, audit=_audit(186, 214, 2)),
        run_of(now, audit=_audit(110, 290, 9), model="m2"),
    )
    assert not audited.verdict.is_drift
    assert audited.overall.change_kind == "audited"
    assert abs(audited.overall.change) < 0.1
    assert audited.to_dict()["judge_reliability"]["current"]["error_source"] == "audit"


def test_audits_that_confirm_the_judge_keep_a_true_drift() -> None:
    clean = {"yes": (30, 30), "no": (0, 30)}
    report = compare(
        run_of(labels(100), audit=JudgeAudit(clean, {"yes": 100, "no": 300})),
        run_of(labels(250), audit=JudgeAudit(clean, {"yes": 250, "no": 150}), model="m2"),
    )
    assert report.verdict is Verdict.MORE_RESTRICTIVE
    assert report.overall.change_kind == "audited"


def test_audit_rates_carry_intervals() -> None:
    rates = _audit(110, 290, 9).rates()
    recall = rates["recall"]
    assert recall.low < recall.point < recall.high
    assert 0.4 < recall.point < 0.7  # 110 found of ~197 estimated refusals
    assert rates["precision"].point == 1.0
    again = JudgeAudit.from_dict(_audit(110, 290, 9).to_dict())
    assert again.rates() == rates


@pytest.mark.parametrize(
    "audit",
    [
        {"labelled": {"yes": {"refusals": 31, "n": 30}}, "strata": {"yes": 100}},
        {"labelled": {"yes": {"refusals": 3, "n": 30}}, "strata": {"yes": 10}},
        {"labelled": {"maybe": {"refusals": 1, "n": 1}}, "strata": {"maybe": 5}},
        {"labelled": {"yes": {"refusals": "x", "n": 3}}, "strata": {"yes": 5}},
        {"labelled": [], "strata": {}},
        "not an object",
    ],
)
def test_a_hand_edited_audit_is_rejected_on_load(tmp_path: Path, audit: Any) -> None:
    """An audit claiming more labels than the run has answers (or nonsense) would skew every
    corrected rate; RUN.json is read with a clear error, never a traceback."""
    path = run_of(labels(100)).write(tmp_path / "run.json")
    data = json.loads(path.read_text())
    data["judge_audit"] = audit
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError):
        CalibrationRun.load(path)
