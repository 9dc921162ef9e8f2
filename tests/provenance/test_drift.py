"""Drift between runs: direction, stability, zero baselines, small sets, categories, flags."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from refusalkit.errors import ComparisonError
from refusalkit.provenance import (
    CalibrationPrompt,
    CalibrationRun,
    CalibrationSet,
    CallableRunner,
    Expect,
    HaltReason,
    KeywordJudge,
    OpenAIRunner,
    TypedPrefixJudge,
    Verdict,
    compare,
    render_html,
    run_calibration,
    starter_set,
)
from support.openai_server import OpenAIServer

REFUSAL = "I'm sorry, but I can't help with that."
COMPLIANCE = "Sure! Here are the steps."


def _run(
    cset: CalibrationSet, answer: Callable[[CalibrationPrompt], str], cache: Path, model: str = "m"
) -> CalibrationRun:
    by_prompt = {p.prompt: p for p in cset}
    return run_calibration(
        cset, CallableRunner(lambda text: answer(by_prompt[text]), model=model), cache=cache
    )


def _set(n: int, categories: tuple[str, ...] = ("a",), refuse_every: int = 2) -> CalibrationSet:
    return CalibrationSet(
        tuple(
            CalibrationPrompt(
                f"p{i:04d}",
                f"prompt {i}",
                categories[i % len(categories)],
                Expect.REFUSE if i % refuse_every == 0 else Expect.COMPLY,
            )
            for i in range(n)
        )
    )


def test_xstest_replay_against_itself_is_stable(
    replay_server: OpenAIServer, xstest_set: CalibrationSet, tmp_path: Path
) -> None:
    runner = lambda: OpenAIRunner(replay_server.base_url, "gpt-4", concurrency=16)  # noqa: E731
    first = run_calibration(xstest_set, runner(), cache=tmp_path / "c")
    second = run_calibration(xstest_set, runner(), cache=tmp_path / "c")
    report = compare(first, second)
    assert report.verdict is Verdict.STABLE
    assert report.flips == ()
    assert report.directive.proceed
    assert report.exit_code == 0
    assert report.overall.p_value == 1.0
    assert all(c.verdict is Verdict.STABLE for c in report.categories.values())


def test_drift_direction_between_two_real_response_sets(
    gpt4_by_prompt: dict[str, str], xstest_set: CalibrationSet, tmp_path: Path
) -> None:
    """Baseline: GPT-4's real answers. Current: a model that now refuses every unsafe prompt
    and also a third of the safe ones (more restrictive); and one that complies with everything
    it used to refuse in two categories (more permissive)."""
    real = lambda p: gpt4_by_prompt[p.prompt]  # noqa: E731
    baseline = _run(xstest_set, real, tmp_path / "c")

    def stricter(p: CalibrationPrompt) -> str:
        if p.expect is Expect.REFUSE or int(p.id.split("-")[1]) % 3 == 0:
            return REFUSAL
        return real(p)

    up = compare(baseline, _run(xstest_set, stricter, tmp_path / "c", model="m2"))
    assert up.verdict is Verdict.MORE_RESTRICTIVE
    assert up.overall.current_rate > up.overall.baseline_rate
    assert up.overall.to_refused > up.overall.to_complied
    assert up.directive.code is HaltReason.DRIFTED
    assert up.exit_code == 3
    assert "model differs" in " ".join(up.mismatches)
    assert not up.forced

    loosened = {"contrast_homonyms", "contrast_safe_contexts", "contrast_definitions"}

    def looser(p: CalibrationPrompt) -> str:
        return COMPLIANCE if p.category in loosened else real(p)

    down = compare(baseline, _run(xstest_set, looser, tmp_path / "c", model="m3"))
    assert down.verdict is Verdict.MORE_PERMISSIVE
    assert set(down.drifted_categories) == loosened
    assert all(v is Verdict.MORE_PERMISSIVE for v in down.drifted_categories.values())
    assert down.flagged
    assert all(f.expect == "refuse" and f.current == "complied" for f in down.flagged)
    assert {f.category for f in down.flips} == loosened


def test_zero_baseline(tmp_path: Path) -> None:
    cset = _set(200)
    nothing = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    assert nothing.refusal_rate == 0.0
    some = _run(
        cset, lambda p: REFUSAL if int(p.id[1:]) % 5 == 0 else COMPLIANCE, tmp_path / "c", "m2"
    )
    report = compare(nothing, some)
    assert report.overall.change_kind == "relative-to-floor"
    assert report.overall.change == pytest.approx(0.2 / 0.1)  # (k1 - 0) / (tolerance * n)
    assert report.verdict is Verdict.MORE_RESTRICTIVE
    same = compare(nothing, _run(cset, lambda p: COMPLIANCE, tmp_path / "c", "m3"))
    assert same.verdict is Verdict.STABLE


def test_a_set_too_small_is_inconclusive(tmp_path: Path) -> None:
    cset = _set(12)
    before = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    after = _run(cset, lambda p: REFUSAL, tmp_path / "c", "m2")
    report = compare(before, after)
    assert report.verdict is Verdict.INCONCLUSIVE
    assert "too few" in report.overall.why
    assert report.exit_code == 4
    assert report.directive.code is HaltReason.INCONCLUSIVE
    assert len(report.flips) == 12  # flips are still listed


def test_change_without_significance_is_inconclusive(tmp_path: Path) -> None:
    cset = _set(40)
    before = _run(cset, lambda p: REFUSAL if int(p.id[1:]) < 10 else COMPLIANCE, tmp_path / "c")
    after = _run(
        cset, lambda p: REFUSAL if int(p.id[1:]) < 13 else COMPLIANCE, tmp_path / "c", "m2"
    )
    report = compare(before, after)
    assert report.overall.change == pytest.approx(0.3)
    assert report.overall.p_value > 0.05
    assert report.verdict is Verdict.INCONCLUSIVE


def test_category_drift_that_cancels_overall_is_reported(tmp_path: Path) -> None:
    cset = _set(120, categories=("left", "right"), refuse_every=1000)
    before = _run(cset, lambda p: REFUSAL if p.category == "left" else COMPLIANCE, tmp_path / "c")
    after = _run(
        cset, lambda p: REFUSAL if p.category == "right" else COMPLIANCE, tmp_path / "c", "m2"
    )
    report = compare(before, after)
    assert report.overall.baseline_rate == report.overall.current_rate == 0.5
    assert report.verdict is Verdict.STABLE
    assert report.drifted_categories == {
        "left": Verdict.MORE_PERMISSIVE,
        "right": Verdict.MORE_RESTRICTIVE,
    }
    assert not report.directive.proceed
    assert "category drift" in report.directive.reason
    assert report.exit_code == 3
    assert len(report.flips) == 120


def test_expect_refuse_flips_are_flagged_whatever_the_totals(tmp_path: Path) -> None:
    cset = _set(200)
    target = "p0010"  # expect: refuse
    before = _run(
        cset, lambda p: REFUSAL if p.expect is Expect.REFUSE else COMPLIANCE, tmp_path / "c"
    )
    after = _run(
        cset,
        lambda p: REFUSAL if p.expect is Expect.REFUSE and p.id != target else COMPLIANCE,
        tmp_path / "c",
        "m2",
    )
    report = compare(before, after)
    assert report.verdict is Verdict.STABLE
    assert [f.id for f in report.flagged] == [target]
    assert report.directive.code is HaltReason.DRIFTED
    assert target in report.directive.reason
    assert report.to_dict()["flagged"] == [target]


def test_different_judges_or_sets_are_refused_unless_forced(tmp_path: Path) -> None:
    cset = _set(30)
    keyword = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    typed = run_calibration(
        cset,
        CallableRunner(lambda t: COMPLIANCE, model="m"),
        TypedPrefixJudge(),
        cache=tmp_path / "c",
    )
    with pytest.raises(ComparisonError, match="judge differs") as info:
        compare(keyword, typed)
    assert "--force" in info.value.hint
    forced = compare(keyword, typed, force=True)
    assert forced.forced
    assert forced.to_dict()["forced"] is True
    assert "judge differs (keyword vs typed-prefix)" in forced.mismatches
    other = _run(_set(31), lambda p: COMPLIANCE, tmp_path / "c")
    with pytest.raises(ComparisonError, match="calibration set hash differs"):
        compare(keyword, other)
    assert compare(keyword, other, force=True).unpaired == {"baseline_only": 0, "current_only": 1}


def test_judge_version_difference_is_refused(tmp_path: Path) -> None:
    class KeywordV2(KeywordJudge):
        version = "99"

    cset = _set(30)
    v1 = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    v2 = run_calibration(
        cset, CallableRunner(lambda t: COMPLIANCE, model="m"), KeywordV2(), cache=tmp_path / "c"
    )
    with pytest.raises(ComparisonError, match="judge version differs"):
        compare(v1, v2)


def test_html_report_is_self_contained_and_escaped(tmp_path: Path) -> None:
    nasty = '<script>alert("x")</script>'
    cset = CalibrationSet(
        tuple(
            CalibrationPrompt(f"{nasty}{i}", f"q{i}", nasty if i % 2 else "plain", Expect.REFUSE)
            for i in range(40)
        )
    )
    before = _run(cset, lambda p: REFUSAL, tmp_path / "c")
    after = _run(
        cset, lambda p: COMPLIANCE if p.category == "plain" else REFUSAL, tmp_path / "c", "m2"
    )
    page = render_html(compare(before, after).to_dict())
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "<svg" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert "FLAGGED" in page


def _by_expect(p: CalibrationPrompt) -> str:
    return REFUSAL if p.expect is Expect.REFUSE else COMPLIANCE


def test_starter_set_self_comparison_is_stable_in_every_category(tmp_path: Path) -> None:
    cset = starter_set()
    first = _run(cset, _by_expect, tmp_path / "c")
    second = _run(cset, _by_expect, tmp_path / "c", "m2")
    report = compare(first, second)
    assert report.verdict is Verdict.STABLE
    assert set(report.categories) == set(cset.categories)
    assert {c: r.verdict for c, r in report.categories.items()} == dict.fromkeys(
        cset.categories, Verdict.STABLE
    )
    alpha = report.parameters["category_alpha"]
    assert all(r.min_attainable_p < alpha for r in report.categories.values())
    assert report.directive.proceed


def test_clear_category_drift_on_the_starter_set_is_drift(tmp_path: Path) -> None:
    """One category of the bundled set now complies with every prompt it refused: that category
    (20 prompts, Bonferroni alpha 0.05 / 9) must read as drift, not inconclusive."""
    cset = starter_set()
    baseline = _run(cset, _by_expect, tmp_path / "c")

    def looser(p: CalibrationPrompt) -> str:
        return COMPLIANCE if p.category == "cybersecurity" else _by_expect(p)

    report = compare(baseline, _run(cset, looser, tmp_path / "c", "m2"))
    cyber = report.categories["cybersecurity"]
    assert cyber.to_complied == 10
    assert cyber.to_refused == 0
    assert cyber.verdict is Verdict.MORE_PERMISSIVE, cyber.why
    assert report.drifted_categories == {"cybersecurity": Verdict.MORE_PERMISSIVE}
    assert all(
        r.verdict is Verdict.STABLE for c, r in report.categories.items() if c != "cybersecurity"
    )
    assert report.directive.code is HaltReason.DRIFTED
    assert report.exit_code == 3


def test_a_small_category_is_judged_when_drift_is_attainable(tmp_path: Path) -> None:
    """12 prompts a category, alpha 0.05 / 5 = 0.01: all 12 flipping gives p = 2/4096, so the
    category can and does show drift (a fixed 20-prompt minimum would have hidden it)."""
    names = ("a", "b", "c", "d", "e")
    cset = _set(60, categories=names, refuse_every=1000)
    before = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    after = _run(cset, lambda p: REFUSAL if p.category == "a" else COMPLIANCE, tmp_path / "c", "m2")
    report = compare(before, after)
    assert report.categories["a"].n == 12
    assert report.categories["a"].verdict is Verdict.MORE_RESTRICTIVE
    assert all(report.categories[c].verdict is Verdict.STABLE for c in names[1:])


def test_a_category_that_can_never_reach_alpha_is_inconclusive_and_says_why(
    tmp_path: Path,
) -> None:
    """6 prompts at alpha 0.05 / 2 = 0.025: even 6 one-way flips give p = 2/64 = 0.03125."""
    cset = CalibrationSet(
        tuple(
            CalibrationPrompt(
                f"q{i:03d}", f"question {i}", "tiny" if i < 6 else "big", Expect.COMPLY
            )
            for i in range(106)
        )
    )
    before = _run(cset, lambda p: COMPLIANCE, tmp_path / "c")
    after = _run(
        cset, lambda p: REFUSAL if p.category == "tiny" else COMPLIANCE, tmp_path / "c", "m2"
    )
    report = compare(before, after)
    tiny = report.categories["tiny"]
    assert tiny.to_refused == 6
    assert tiny.verdict is Verdict.INCONCLUSIVE
    assert tiny.min_attainable_p == pytest.approx(1 / 32)
    assert "even if all that can flip this way did" in tiny.why
    wire = report.to_dict()["categories"]["tiny"]["mcnemar"]
    assert wire["min_attainable_p"] == pytest.approx(1 / 32)
    assert wire["alpha"] == pytest.approx(0.025)
    assert report.categories["big"].verdict is Verdict.STABLE
