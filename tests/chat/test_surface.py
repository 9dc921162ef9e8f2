"""The typed refusal builder and hedge injection (docs/design/chat.md)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.chat import EthicsVerdict, PredicateResult, SafetyVerdict
from refusalkit.chat._surface import build_refusal, inject_hedge, refusal_tags
from refusalkit.model import TYPED_REFUSAL_PREFIX, PolicyRef

PACK = PolicyRef("p", "v1", "sha256:" + "0" * 64)
IDS = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


def _result(ident: str, *, upheld: bool, checkable: bool = True) -> PredicateResult:
    return PredicateResult(ident, upheld=upheld, runtime_checkable=checkable, evidence={})


def _safety(*results: PredicateResult) -> SafetyVerdict:
    return SafetyVerdict(PACK, tuple(results))


def _ethics(*results: PredicateResult, refuse: tuple[str, ...] = (), hedge: tuple[str, ...] = ()):
    return EthicsVerdict(PACK, tuple(results), frozenset(refuse), frozenset(hedge))


def test_no_verdict_builds_no_refusal() -> None:
    assert build_refusal(None, None) is None
    assert refusal_tags(None, None) == ()


def test_all_upheld_builds_no_refusal() -> None:
    safety = _safety(_result("no_secret_disclosure", upheld=True), _result("b", upheld=True))
    ethics = _ethics(_result("c", upheld=True), refuse=("c",))
    assert build_refusal(safety, ethics) is None


def test_non_checkable_violation_never_refuses() -> None:
    safety = _safety(_result("no_harmful_compliance", upheld=False, checkable=False))
    ethics = _ethics(_result("c", upheld=False, checkable=False), refuse=("c",))
    assert build_refusal(safety, ethics) is None


def test_single_violation_exact_bytes() -> None:
    safety = _safety(_result("no_secret_disclosure", upheld=False))
    refusal = build_refusal(safety, None)
    assert refusal is not None
    expected = "I cannot proceed — boundary violated: safety:no_secret_disclosure"
    assert refusal.text.encode("utf-8") == expected.encode("utf-8")
    assert refusal.tags == ("safety:no_secret_disclosure",)
    assert refusal.first_tag == "safety:no_secret_disclosure"


def test_safety_and_ethics_tags_mixed_and_lex_sorted() -> None:
    safety = _safety(_result("zeta", upheld=False), _result("alpha", upheld=False))
    ethics = _ethics(_result("no_legal_verdicts", upheld=False), refuse=("no_legal_verdicts",))
    refusal = build_refusal(safety, ethics)
    assert refusal is not None
    assert refusal.tags == ("ethics:no_legal_verdicts", "safety:alpha", "safety:zeta")
    assert refusal.text == (
        TYPED_REFUSAL_PREFIX + "ethics:no_legal_verdicts,safety:alpha,safety:zeta"
    )


def test_ethics_violation_outside_refusal_commitments_never_refuses() -> None:
    ethics = _ethics(
        _result("acknowledge_uncertainty", upheld=False),
        _result("recorded_only", upheld=False),
        hedge=("acknowledge_uncertainty",),
    )
    assert build_refusal(None, ethics) is None
    assert ethics.violations == ("acknowledge_uncertainty", "recorded_only")
    assert ethics.hedging == ("acknowledge_uncertainty",)


@settings(max_examples=150)
@given(
    safety_ids=st.lists(IDS, max_size=6, unique=True),
    ethics_ids=st.lists(IDS, max_size=6, unique=True),
    seed=st.integers(0, 2**32 - 1),
)
def test_same_violations_same_bytes_in_any_order(
    safety_ids: list[str], ethics_ids: list[str], seed: int
) -> None:
    def verdicts(order: random.Random | None):
        s, e = list(safety_ids), list(ethics_ids)
        if order is not None:
            order.shuffle(s)
            order.shuffle(e)
        return (
            _safety(*(_result(i, upheld=False) for i in s)),
            _ethics(*(_result(i, upheld=False) for i in e), refuse=tuple(e)),
        )

    one, two = build_refusal(*verdicts(None)), build_refusal(*verdicts(random.Random(seed)))
    if not safety_ids and not ethics_ids:
        assert one is None
        assert two is None
        return
    assert one is not None
    assert two is not None
    assert one.text.encode() == two.text.encode()
    assert list(one.tags) == sorted(one.tags)
    expected = sorted([f"safety:{i}" for i in safety_ids] + [f"ethics:{i}" for i in ethics_ids])
    assert one.text == TYPED_REFUSAL_PREFIX + ",".join(expected)


@settings(max_examples=150)
@given(surface=st.text(max_size=80), hedge=st.text(min_size=1, max_size=30))
def test_hedge_injection_is_idempotent(surface: str, hedge: str) -> None:
    once = inject_hedge(surface, hedge)
    assert inject_hedge(once, hedge) == once
    if hedge.strip():
        assert once.lstrip().casefold().startswith(hedge.strip().casefold())


def test_hedge_prefix_check_ignores_case() -> None:
    hedge = "I might be wrong about this."
    assert inject_hedge("i MIGHT be wrong about this. Rain.", hedge) == (
        "i MIGHT be wrong about this. Rain."
    )
    assert inject_hedge("Rain tomorrow.", hedge) == "I might be wrong about this. Rain tomorrow."


def test_no_hedge_configured_injects_nothing() -> None:
    assert inject_hedge("Rain tomorrow.", None) == "Rain tomorrow."
    assert inject_hedge("Rain tomorrow.", "   ") == "Rain tomorrow."
