"""Three-way outcomes in runs and drift: full compliance / partial refusal / full refusal /
uncertain recorded per prompt, drift counting full + partial (default) or full only, both rates
in the report, and the flag list ordered by confidence with the judge's measured precision."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from refusalkit.errors import CalibrationError
from refusalkit.provenance import (
    CalibrationPrompt,
    CalibrationRun,
    CalibrationSet,
    CallableRunner,
    Expect,
    Judgement,
    KeywordJudge,
    RefusalCount,
    RefusalOutcome,
    Refused,
    Verdict,
    compare,
    render_html,
    run_calibration,
)
from refusalkit.provenance._judge_error import HELD_OUT_COUNTS, _interval


class MarkedJudge:
    """A real judge for these tests: answers say what they are ("FULL", "PART", "OK p=0.2")."""

    id = "marked"
    version = "1"

    def judge(self, response: str) -> Judgement:
        kind, _, p = response.partition(" p=")
        probability = float(p) if p else None
        if kind == "FULL":
            return Judgement(Refused.YES, probability or 0.95, "full-refusal:marked")
        if kind == "PART":
            return Judgement(Refused.YES, probability or 0.9, "partial-refusal:marked")
        return Judgement(Refused.NO, 0.05 if probability is None else probability, "compliance")


def _set(n: int = 40) -> CalibrationSet:
    return CalibrationSet(
        tuple(
            CalibrationPrompt(
                f"p{i:03d}", f"prompt {i}", "c", Expect.REFUSE if i % 2 == 0 else Expect.COMPLY
            )
            for i in range(n)
        )
    )


def _run(
    cset: CalibrationSet, answer: Callable[[int], str], tmp_path: Path, judge: object = None
) -> CalibrationRun:
    def model(prompt: str) -> str:
        return answer(int(prompt.split()[1]))

    return run_calibration(
        cset,
        CallableRunner(model, model="m"),
        MarkedJudge() if judge is None else judge,  # type: ignore[arg-type]
        cache=tmp_path / "cache",
        fresh=True,
    )


def test_runs_record_the_three_way_outcome(tmp_path: Path) -> None:
    run = _run(_set(), lambda i: ("FULL", "PART", "OK", "OK")[i % 4], tmp_path)
    record = run.to_dict()
    kinds = [o["outcome"] for o in record["outcomes"]]
    assert kinds[:4] == ["full-refusal", "partial-refusal", "full-compliance", "full-compliance"]
    assert record["outcome_counts"] == {
        "full-compliance": 20,
        "partial-refusal": 10,
        "full-refusal": 10,
        "uncertain": 0,
    }
    assert record["refusal_rate"] == 0.5
    assert record["full_refusal_rate"] == 0.25
    assert CalibrationRun.from_dict(record).outcomes == run.outcomes


def test_older_records_without_an_outcome_still_read(tmp_path: Path) -> None:
    record = _run(_set(), lambda i: "PART" if i % 2 else "OK", tmp_path).to_dict()
    for o in record["outcomes"]:
        del o["outcome"]
    run = CalibrationRun.from_dict(record)
    assert {o.outcome for o in run.outcomes} == {
        RefusalOutcome.PARTIAL_REFUSAL,
        RefusalOutcome.FULL_COMPLIANCE,
    }


def test_an_outcome_that_contradicts_the_judgement_is_refused(tmp_path: Path) -> None:
    record = _run(_set(), lambda i: "OK", tmp_path).to_dict()
    record["outcomes"][0]["outcome"] = "full-refusal"
    with pytest.raises(CalibrationError, match="contradicts"):
        CalibrationRun.from_dict(record)
    record["outcomes"][0]["outcome"] = "half-refusal"
    with pytest.raises(CalibrationError, match="malformed"):
        CalibrationRun.from_dict(record)


def test_drift_counts_partial_refusals_unless_told_full_only(tmp_path: Path) -> None:
    """Full refusals that became partial: no drift counting both, a permissive drift counting
    full refusals only; the report shows both rates whichever it counted."""
    cset = _set()
    before = _run(cset, lambda i: "FULL" if i % 2 == 0 else "OK", tmp_path)
    after = _run(cset, lambda i: "PART" if i % 2 == 0 else "OK", tmp_path)
    both = compare(before, after)
    assert both.verdict is Verdict.STABLE
    assert not both.flagged
    full = compare(before, after, count="full")
    assert full.verdict is Verdict.MORE_PERMISSIVE
    assert full.parameters["count"] == "full"
    assert len(full.flagged) == 20
    for report in (both, full):
        rates = report.to_dict()["refusal_rates"]["overall"]
        assert (
            rates["full+partial"]["baseline_rate"] == rates["full+partial"]["current_rate"] == 0.5
        )
        assert (rates["full"]["baseline_rate"], rates["full"]["current_rate"]) == (0.5, 0.0)
    assert RefusalCount("full") is RefusalCount.FULL
    with pytest.raises(ValueError, match="half"):
        compare(before, after, count="half")


def test_flags_are_ordered_by_confidence(tmp_path: Path) -> None:
    """The judges' confidence in each flip orders the flag list and the directive's reason."""
    cset = _set()
    before = _run(cset, lambda i: "FULL" if i % 2 == 0 else "OK", tmp_path)
    shaky = {0: "0.45", 2: "0.01", 4: "0.3"}
    after = _run(
        cset, lambda i: f"OK p={shaky[i]}" if i in shaky else ("FULL" if i % 2 == 0 else "OK"),
        tmp_path,
    )  # fmt: skip
    report = compare(before, after)
    assert [f.id for f in report.flagged] == ["p002", "p004", "p000"]
    confidences = [f.confidence for f in report.flagged]
    assert confidences == sorted(confidences, reverse=True)
    assert confidences[0] == pytest.approx(0.95 * 0.99)
    assert report.to_dict()["flagged"] == ["p002", "p004", "p000"]
    assert "p002, p004, p000" in report.directive.reason
    # an unmeasured judge: no precision is claimed for the list
    assert report.flag_precision["point"] is None
    assert report.flag_precision["baseline_source"] == "unmeasured"


def test_flag_precision_is_the_judges_held_out_precision(tmp_path: Path) -> None:
    """With the keyword judge, a flag is right when the baseline's refusal was one (precision)
    and the current compliance is one (negative predictive value), both family held out."""
    cset = _set()
    judge = KeywordJudge()
    refusal, answer = "I'm sorry, but I can't help with that.", "Sure! Here are the steps."
    before = _run(cset, lambda i: refusal if i % 2 == 0 else answer, tmp_path, judge)
    after = _run(cset, lambda i: refusal if i % 4 == 0 else answer, tmp_path, judge)
    report = compare(before, after)
    assert len(report.flagged) == 10
    tp, fp, fn, tn = HELD_OUT_COUNTS[("keyword", "3")]
    precision, npv = _interval(tp, tp + fp), _interval(tn, tn + fn)
    measured = report.flag_precision
    assert measured["point"] == pytest.approx(precision.point * npv.point)
    assert measured["interval"] == pytest.approx(
        [precision.low * npv.low, precision.high * npv.high]
    )
    assert (measured["baseline_source"], measured["current_source"]) == ("judge", "judge")
    assert compare(before, after, count="full").flag_precision["point"] is None


def test_the_html_report_shows_both_rates_and_the_flag_list(tmp_path: Path) -> None:
    cset = _set()
    judge = KeywordJudge()
    refusal, answer = "I'm sorry, but I can't help with that.", "Sure! Here are the steps."
    before = _run(cset, lambda i: refusal if i % 2 == 0 else answer, tmp_path, judge)
    after = _run(cset, lambda i: refusal if i % 4 == 0 else answer, tmp_path, judge)
    page = render_html(compare(before, after).to_dict())
    assert "Refusal rate, full+partial (counted): 50.0% &rarr; 25.0%; full: 50.0%" in page
    assert "Flagged: expect refuse, now complies (10)" in page
    assert "judge precision 66.3% (95% CI" in page
    assert page.index("p002") < page.index("Flipped prompts")
