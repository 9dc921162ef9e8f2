"""Family-held-out model selection: reproducible from one command, and its figures are the docs'.

``python bench/judges.py --cv`` prints what :func:`cross_validate` returns; docs/provenance.md
tabulates it; the shipped choices (``data/keyword-v3.json``, ``data/classifier-v3.json``) are
what selection on all three families gives; the drift rule's measured judge error
(``HELD_OUT_COUNTS``) is the pooled held-out counts. Needs the labelled data in
``shared/data`` beside the checkout (as in CI); skipped with the reason where it is missing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from refusalkit.provenance import KeywordJudge, RefusalOutcome, get_judge
from refusalkit.provenance._families import FAMILIES, TONES, Labelled, find_data, load_families
from refusalkit.provenance._judge_error import HELD_OUT_COUNTS
from refusalkit.provenance._selection import (
    PEER,
    Fold,
    Scores,
    cross_validate,
    pooled,
    prepare,
    select_classifier,
    select_keyword,
    xstest_strmatch,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = find_data(ROOT)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        DATA is None, reason="labelled data not found in shared/data beside the checkout"
    ),
]


@pytest.fixture(scope="module")
def families() -> dict[str, list[Labelled]]:
    return load_families(DATA)


@pytest.fixture(scope="module")
def folds(families: dict[str, list[Labelled]]) -> list[Fold]:
    return cross_validate(families)


def _docs_table() -> dict[tuple[str, str], list[float]]:
    """The leave-one-family-out table of docs/provenance.md: (family, judge) -> figures."""
    text = (ROOT / "docs" / "provenance.md").read_text("utf-8")
    block = text.split("<!-- leave-one-family-out -->")[1].split("<!-- /leave-one-family-out")[0]
    found = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"[\d.]+", cells[4]):
            family = cells[0].split(" (")[0]
            found[(family, cells[1])] = [float(c) if c else -1.0 for c in cells[2:6]]
    return found


def test_the_docs_table_is_what_the_cross_validation_computes(folds: list[Fold]) -> None:
    table = _docs_table()
    expected: dict[tuple[str, str], list[float]] = {}
    for fold in folds:
        for judge, s in fold.scores.items():
            figures = [s.precision, s.recall, s.f1, s.three_way / s.n]
            expected[(fold.held_out, judge)] = [round(x, 3) for x in figures]
    for judge, (mean_f1, _) in pooled(folds).items():
        expected[("mean of families", judge)] = [-1.0, -1.0, round(mean_f1, 3), -1.0]
    assert table == expected


def test_every_choice_is_made_without_the_family_it_is_scored_on(
    families: dict[str, list[Labelled]], folds: list[Fold]
) -> None:
    """Each fold's choices are exactly what selection on the other two families gives; the
    held-out family's labels cannot have reached them."""
    assert [f.held_out for f in folds] == list(FAMILIES)
    data = prepare(families)
    fold = folds[0]
    train = {k: v for k, v in data.items() if k != fold.held_out}
    assert select_keyword(train) == fold.keyword
    flipped = dict(data)
    signals, rows = flipped[fold.held_out]
    flipped[fold.held_out] = (signals, [_flip(r) for r in rows])
    assert select_keyword({k: v for k, v in flipped.items() if k != fold.held_out}) == fold.keyword


def _flip(row: Labelled) -> Labelled:
    outcome = RefusalOutcome.FULL_COMPLIANCE if row.refused else RefusalOutcome.FULL_REFUSAL
    return Labelled(row.family, row.key, row.response, outcome)


def test_the_shipped_choices_are_selection_on_all_three_families(
    families: dict[str, list[Labelled]],
) -> None:
    data = prepare(families)
    assert KeywordJudge().config == select_keyword(data)
    shipped = json.loads(
        resources.files("refusalkit.provenance").joinpath("data", "classifier-v3.json").read_text()
    )
    model = select_classifier(data)
    assert shipped["l2"] == model["l2"]
    assert shipped["weights"] == pytest.approx(model["weights"], abs=1e-6)


def test_the_drift_rule_uses_the_pooled_held_out_counts(folds: list[Fold]) -> None:
    summary = pooled(folds)
    for judge in ("keyword", "classifier"):
        s = summary[judge][1]
        assert HELD_OUT_COUNTS[(judge, "3")] == (s.tp, s.fp, s.fn, s.tn)


def test_the_default_judge_is_the_one_that_wins_family_held_out(folds: list[Fold]) -> None:
    """The classifier would be the default only if it beat the keyword judge on the mean
    held-out F1 *and* on its worst family; it does not, so ``keyword`` stays the default."""
    summary = pooled(folds)
    worst = {j: min(f.scores[j].f1 for f in folds) for j in ("keyword", "classifier")}
    classifier_wins = (
        summary["classifier"][0] > summary["keyword"][0] and worst["classifier"] > worst["keyword"]
    )
    default = get_judge("keyword")
    assert not classifier_wins
    assert default.id == "keyword"


def test_the_chatgpt_tones_map_onto_three_way_outcomes(
    families: dict[str, list[Labelled]],
) -> None:
    raw = json.loads((DATA / "chatgpt-refusals" / "all_hand_labeled.json").read_text("utf-8"))  # type: ignore[operator]
    tones = Counter(str(r["tone"]) for r in raw)
    assert set(tones) <= set(TONES)
    kept = sum(n for tone, n in tones.items() if TONES[tone][0] is not None)
    assert len(families["gpt-3.5"]) == kept == len(raw) - tones["dontknow"] - tones["incoherent"]
    assert TONES["contradicted"][0] is RefusalOutcome.FULL_REFUSAL
    assert TONES["redirected"][0] is TONES["counseling"][0] is RefusalOutcome.PARTIAL_REFUSAL
    assert TONES["complied"][0] is RefusalOutcome.FULL_COMPLIANCE


def test_scores_and_the_peer() -> None:
    s = Scores(tp=8, fp=2, fn=2, tn=8, three_way=15)
    assert (s.precision, s.recall, s.npv, s.n) == (0.8, 0.8, 0.8, 20)
    assert s.f1 == pytest.approx(0.8)
    assert xstest_strmatch("  I'm sorry, but no.")
    assert not xstest_strmatch("Sure. I'm sorry to hear that.")
    assert PEER == "xstest-strmatch"
