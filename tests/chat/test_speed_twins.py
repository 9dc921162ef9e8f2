"""The scanner's speed twins, each pinned to its reference (CONTRIBUTING.md, "Speed twins").

This test imports internal modules only to pin a speed twin to its reference:

* the RE2 set passes that pick which credential patterns and personal-data detectors run
  (``_secrets``, ``_personal``) against running every one of them, and the set pass that drops
  gitleaks' common-keyword rules without a match (``_gitleaks``) against running them;
* the view's one-pass deletions (``_view.build``) against applying every step's edits;
* ``clean_text``'s UTF-8 test against the surrogate regex;
* the view shared by the detectors of one text (``_detect``) against building it per call;
* each pattern's screen in the set passes (``_screen``) against the pattern: it matches
  wherever the pattern does.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.chat import _detect, _personal, _screen, _secrets, _view
from refusalkit.chat._gitleaks import load_rules
from refusalkit.chat._untrusted import clean_text

ROOT = Path(__file__).resolve().parents[2]
CORPORA = (
    ROOT / "bench" / "data" / "detect-corpus.jsonl",
    ROOT / "bench" / "data" / "detect-evasion.jsonl",
)
MARKS = ("**", "*", "`", "```\n", "~~", "_", "__", " | ", "\n", "&amp;", "&#65;", "<b>", "</b>")
ODD = "\u200b\u00ad\u2060\ufeff\u0410\u0430\uff21\uff11\u00b5\u2026\ud800\U000e0041"


@cache
def corpus() -> tuple[str, ...]:
    rows = [json.loads(x) for path in CORPORA for x in path.read_text("utf-8").splitlines() if x]
    return tuple(row["text"] for row in rows)


@cache
def fragments() -> tuple[str, ...]:
    """Pieces of the corpus' texts: secrets, labels and look-alikes to splice together."""
    return tuple(piece for text in corpus()[::7] for piece in re.split(r"(?<=[\s,;])", text))


def turns() -> st.SearchStrategy[str]:
    piece = st.one_of(
        st.sampled_from(fragments()),
        st.sampled_from(MARKS),
        st.text(st.sampled_from("aA0=+/-_.:@ \n" + ODD), max_size=12),
    )
    return st.lists(piece, max_size=10).map("".join)


def _reference_view(text: str) -> str | None:
    """Every step's edits applied in order, without the one-pass deletions."""
    current = text
    for step in _view._STEPS:
        edits = list(step(current))
        if edits:
            current = _view._apply(current, edits, mapped=False)[0]
    return None if current == text else current


def _same_sets(text: str) -> None:
    checked = clean_text(text)
    every = _secrets.find_secrets(checked, _secrets.EVERY_PATTERN)
    assert _secrets.find_secrets(checked) == every
    assert _personal.find_private_data(checked) == _personal.find_private_data(
        checked, _personal.EVERY_DETECTOR
    )
    rules = load_rules()
    assert list(rules.scan(checked)) == list(rules.scan(checked, confirm=False))


def test_the_set_passes_skip_only_patterns_without_a_match_on_the_corpus() -> None:
    for text in corpus():
        _same_sets(text)
        view = _view.build(clean_text(text))
        if view is not None:
            _same_sets(view.text)


@settings(max_examples=300, deadline=None)
@given(turns())
def test_the_set_passes_skip_only_patterns_without_a_match(text: str) -> None:
    _same_sets(text)


@settings(max_examples=400, deadline=None)
@given(turns())
def test_the_view_equals_its_steps_applied_one_by_one(text: str) -> None:
    view = _view.build(text)
    assert (None if view is None else view.text) == _reference_view(text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=()), max_size=40))
def test_clean_text_replaces_exactly_the_lone_surrogates(text: str) -> None:
    assert clean_text(text) == re.sub("[\ud800-\udfff]", "\ufffd", text)


@settings(max_examples=100, deadline=None)
@given(turns())
def test_the_shared_view_gives_what_building_it_per_call_gives(text: str) -> None:
    checked = clean_text(text)
    _detect._prepared_plain.cache_clear()
    secrets, private = _detect.find_secrets(text), _detect.find_private_data(text)
    shared, fresh = _detect._prepared(text), _view.build(checked)
    assert shared[0] == checked
    assert (shared[1] and shared[1].text) == (fresh and fresh.text)
    _detect._prepared_plain.cache_clear()
    assert _detect.find_secrets(text) == secrets
    _detect._prepared_plain.cache_clear()
    assert _detect.find_private_data(text) == private


def test_a_str_subclass_cannot_borrow_another_texts_view() -> None:
    """A subclass that claims to equal (and hash as) a scanned benign text is still scanned
    as what it holds: the shared view is keyed by plain strings."""
    benign = "The deploy finished at 10:30; 42 checks passed."

    class Impostor(str):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash(benign)

    assert _detect.find_secrets(Impostor(benign)) == []
    found = _detect.find_secrets(Impostor("key AKIAQ3EGRT5WZ7XK2LMN"))
    assert [f.kind for f in found] == ["aws_access_key_id"]


@cache
def screened() -> tuple[tuple[object, object], ...]:
    """Every pattern a set pass holds the screen of, beside its screen."""
    rules = load_rules()
    patterns = [x.rx for x in _secrets._CURATED] + [x.rx for x in _personal._DETECTORS]
    patterns += [_secrets._ENCODED, _secrets._BROKEN, _secrets._LITERALS]
    patterns += [rules.rules[i].rx for i in rules._confirmable]
    return tuple((rx, re2.compile(_screen.screen(rx.pattern))) for rx in patterns)


def _screens_cover(text: str) -> None:
    for rx, screen in screened():
        if rx.search(text) is not None:
            assert screen.search(text) is not None, (rx.pattern, text)


def test_each_screen_matches_wherever_its_pattern_does_on_the_corpus() -> None:
    for text in corpus():
        checked = clean_text(text)
        _screens_cover(checked)
        view = _view.build(checked)
        if view is not None:
            _screens_cover(view.text)


@settings(max_examples=200, deadline=None)
@given(turns())
def test_each_screen_matches_wherever_its_pattern_does(text: str) -> None:
    _screens_cover(clean_text(text))


def test_a_screen_widens_only_bounded_repetitions_and_a_leading_optional_run() -> None:
    assert (
        _screen.screen(r"(?i)[\w.-]{0,50}?key[ \t]{0,20}=[a-z]{10,150}")
        == r"(?i)key[ \t]{0,}=[a-z]{10,}"
    )
    assert (
        _screen.screen(r"a{2,4}[x{1,9}]\{1,9}\x{2019}{1,9}") == r"a{2,4}[x{1,9}]\{1,9}\x{2019}{1,}"
    )
    assert _screen.screen(r"[[:alpha:]]{1,9}\p{Greek}{0,9}") == r"[[:alpha:]]{1,}\p{Greek}{0,}"
    assert _screen.screen(r"(?i)[a-z]{0,9}") == r"(?i)[a-z]{0,}"  # nothing would be left
