"""Property tests of the statistics: Wilson intervals, exact McNemar, and the verdict rule."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from refusalkit.provenance import Verdict
from refusalkit.provenance._stats import mcnemar_exact, wilson_interval
from refusalkit.provenance._verdict import compare_counts, min_attainable_p

counts = st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@settings(max_examples=200)
@given(counts)
def test_wilson_contains_p_and_stays_in_unit_interval(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


@settings(max_examples=200)
@given(counts, st.integers(2, 10))
def test_wilson_shrinks_with_n(kn: tuple[int, int], factor: int) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    low2, high2 = wilson_interval(k * factor, n * factor)
    assert high2 - low2 < high - low


@settings(max_examples=100)
@given(counts)
def test_wilson_is_symmetric(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    low2, high2 = wilson_interval(n - k, n)
    assert math.isclose(low, 1 - high2, abs_tol=1e-12)
    assert math.isclose(high, 1 - low2, abs_tol=1e-12)


def test_wilson_known_values() -> None:
    # Newcombe (1998), Table I: 81/263 -> 0.2553 .. 0.3662; 0/10 -> 0 .. 0.2775
    low, high = wilson_interval(81, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


def test_mcnemar_known_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0
    # exact binomial two-sided, b=1, c=9: 2 * (1 + 10) / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)


@settings(max_examples=200)
@given(st.integers(0, 300), st.integers(0, 300))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0
    assert p == mcnemar_exact(c, b)


@settings(max_examples=200)
@given(st.integers(0, 300), st.integers(0, 300))
def test_mcnemar_is_monotone_in_imbalance(b: int, c: int) -> None:
    assume(c >= b)
    # one more flip on the larger side makes the evidence stronger; one more on the smaller, weaker
    assert mcnemar_exact(b, c + 1) <= mcnemar_exact(b, c)
    if b + 1 <= c:
        assert mcnemar_exact(b + 1, c) >= mcnemar_exact(b, c)


paired = st.integers(1, 400).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(0, n), st.integers(0, n))
)


def _compare(n: int, k0: int, b: int, c: int, tol: float = 0.1, alpha: float = 0.05):  # type: ignore[no-untyped-def]
    return compare_counts(n, k0, k0 - b + c, b, c, tolerance=tol, alpha=alpha)


@settings(max_examples=300)
@given(paired, st.floats(0.0, 0.5), st.floats(0.001, 0.2))
def test_direction_swaps_when_baseline_and_current_swap(
    case: tuple[int, int, int, int], tol: float, alpha: float
) -> None:
    n, k0, b, c = case
    assume(b <= k0 and c <= n - k0)
    forward = _compare(n, k0, b, c, tol, alpha)
    k1 = k0 - b + c
    backward = compare_counts(n, k1, k0, c, b, tolerance=tol, alpha=alpha)
    assert forward.p_value == backward.p_value
    opposite = {
        Verdict.MORE_RESTRICTIVE: Verdict.MORE_PERMISSIVE,
        Verdict.MORE_PERMISSIVE: Verdict.MORE_RESTRICTIVE,
    }
    if forward.verdict.is_drift and backward.verdict.is_drift:
        assert backward.verdict is opposite[forward.verdict]
    if forward.verdict.is_drift:
        assert backward.verdict is not forward.verdict
        # a rising rate is more restrictive, a falling one more permissive
        assert (forward.verdict is Verdict.MORE_RESTRICTIVE) == (k1 > k0)


@settings(max_examples=200)
@given(paired)
def test_no_change_is_never_drift(case: tuple[int, int, int, int]) -> None:
    n, k0, _, _ = case
    r = compare_counts(n, k0, k0, 0, 0, tolerance=0.1, alpha=0.05)
    assert r.verdict in (Verdict.STABLE, Verdict.INCONCLUSIVE)
    assert r.p_value == 1.0


def test_verdict_rule_examples() -> None:
    up = compare_counts(100, 20, 40, 0, 20, tolerance=0.1, alpha=0.05)
    assert up.verdict is Verdict.MORE_RESTRICTIVE
    assert up.change == pytest.approx(1.0)
    down = compare_counts(100, 40, 20, 20, 0, tolerance=0.1, alpha=0.05)
    assert down.verdict is Verdict.MORE_PERMISSIVE
    small = compare_counts(100, 40, 42, 0, 2, tolerance=0.1, alpha=0.05)
    assert small.verdict is Verdict.STABLE
    unsure = compare_counts(100, 20, 25, 3, 8, tolerance=0.1, alpha=0.05)
    assert unsure.verdict is Verdict.INCONCLUSIVE
    tiny = compare_counts(10, 0, 10, 0, 10, tolerance=0.1, alpha=0.05)
    assert tiny.verdict is Verdict.INCONCLUSIVE
    assert "too few" in tiny.why


def test_zero_baseline_tolerance_is_continuous() -> None:
    r = compare_counts(200, 0, 30, 0, 30, tolerance=0.1, alpha=0.05)
    assert r.change_kind == "relative-to-floor"
    assert r.change == pytest.approx(30 / 20)  # the baseline rate floored at the tolerance
    assert r.verdict is Verdict.MORE_RESTRICTIVE
    tiny = compare_counts(200, 0, 2, 0, 2, tolerance=0.1, alpha=0.05)
    assert tiny.change == pytest.approx(0.1)
    assert tiny.verdict is Verdict.STABLE  # 1 point absolute: at most tolerance**2
    still = compare_counts(200, 0, 0, 0, 0, tolerance=0.1, alpha=0.05)
    assert still.verdict is Verdict.STABLE


@settings(max_examples=200)
@given(st.integers(1, 400), st.floats(0.01, 0.5), st.data())
def test_tolerance_has_no_jump_at_a_zero_baseline(
    n: int, tolerance: float, data: st.DataObject
) -> None:
    """One more refusal at baseline moves the change by at most 1 / (tolerance * n) plus the
    relative step: no jump between a zero baseline and a tiny one (the old rule jumped from an
    absolute to a relative change there)."""
    k1 = data.draw(st.integers(0, n))
    k0 = data.draw(st.integers(0, n - 1))
    a = compare_counts(n, k0, k1, 0, 0, tolerance=tolerance, alpha=0.05).change
    b = compare_counts(n, k0 + 1, k1, 0, 0, tolerance=tolerance, alpha=0.05).change
    floor = max(k0, tolerance * n)
    assert abs(a - b) <= (1 + abs(b)) / floor + 1e-9


@settings(max_examples=150)
@given(st.integers(0, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_min_attainable_p_is_the_floor_in_the_tested_direction(nk: tuple[int, int]) -> None:
    """Given k0 baseline refusals of n, no falling outcome (b >= c, b <= k0) goes below the
    falling floor, no rising outcome (c >= b, c <= n - k0) below the rising one, and each floor
    is reached by the complete flip."""
    n, k0 = nk
    falling, rising = min_attainable_p(n, k0, -1), min_attainable_p(n, k0, 1)
    assert falling == mcnemar_exact(k0, 0)
    assert rising == mcnemar_exact(0, n - k0)
    for b in range(k0 + 1):
        for c in range(min(b, n - k0) + 1):
            assert mcnemar_exact(b, c) >= falling
    for c in range(n - k0 + 1):
        for b in range(min(c, k0) + 1):
            assert mcnemar_exact(b, c) >= rising
    assert min_attainable_p(n, k0, 0) == min(falling, rising)


def test_a_comparison_too_small_to_reach_alpha_is_inconclusive() -> None:
    """n = 8 at the Bonferroni alpha of 9 categories: 2/2**8 = 0.0078 >= 0.0056, whatever
    happens; n = 9 gives 0.0039 and a complete flip is drift."""
    alpha = 0.05 / 9
    eight = compare_counts(8, 0, 8, 0, 8, tolerance=0.1, alpha=alpha, min_prompts=0)
    assert eight.verdict is Verdict.INCONCLUSIVE
    assert eight.min_attainable_p == pytest.approx(0.0078125)
    assert "even if all that can flip this way did" in eight.why
    same = compare_counts(8, 4, 4, 0, 0, tolerance=0.1, alpha=alpha, min_prompts=0)
    assert same.verdict is Verdict.INCONCLUSIVE  # even "no change" cannot be told apart
    nine = compare_counts(9, 0, 9, 0, 9, tolerance=0.1, alpha=alpha, min_prompts=0)
    assert nine.verdict is Verdict.MORE_RESTRICTIVE
    # no change among 9 with 4 refused: neither direction could reach alpha, so not "stable"
    assert compare_counts(9, 4, 4, 0, 0, tolerance=0.1, alpha=alpha, min_prompts=0).verdict is (
        Verdict.INCONCLUSIVE
    )
    # a baseline of 8 refusals of 9 cannot fall significantly even if all 8 comply
    assert compare_counts(9, 8, 0, 8, 0, tolerance=0.1, alpha=alpha, min_prompts=0).verdict is (
        Verdict.INCONCLUSIVE
    )
