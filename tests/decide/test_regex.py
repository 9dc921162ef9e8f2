"""The regex shortcuts (literal prefilter, substring test) are sound for RE2 syntax.

Python's ``re`` parser and RE2 read some patterns differently (POSIX classes, ``\\pN``,
``\\Q..\\E``, ``\\C``, ``{,n}``); a shortcut built on Python's reading must never change RE2's
verdict (docs/design/policy.md: ``regex`` is RE2 syntax). The reference is plain ``re2.search``.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import re2
from hypothesis import example, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide._regex import (
    all_requirements,
    re2_compile,
    regex_literal,
    required_literals,
    search_predicate,
    shared_syntax,
)
from refusalkit.keyring import Keyring
from refusalkit.model import Action

CARD_PACK = {
    "policy": "cards",
    "version": "1",
    "default": "allow",
    "rules": [
        {
            "id": "card_numbers",
            "effect": "deny",
            "when": {"args.content": {"regex": "[[:digit:]]{16}"}},
        }
    ],
}


def test_a_posix_class_deny_regex_denies(keyring: Keyring) -> None:
    """The reported fail-open: ``[[:digit:]]{16}`` must deny a card number, with no warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp = DecisionPoint(Pack.from_mapping(CARD_PACK), keyring)
    request = {"tool": "fs.write", "args": {"content": "card 4111111111111111"}}
    decision = dp.decide(request)
    assert (decision.action, decision.matched_rule) == (Action.DENY, "card_numbers")
    assert dp.decide({"tool": "fs.write", "args": {"content": "card 4111"}}).action is Action.ALLOW
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    "pattern",
    [
        "[[:digit:]]{16}",
        "[a[:digit:]]x",
        "[[=a=]]",
        "[[.a.]]",
        "[[]",
        r"\pN",
        r"\p{Greek}x",
        r"\Q.*\E",
        r"\C",
        "x{,3}",
        r"\0",
        r"\101",
        r"\x{41}",
        r"\z",
        "(?U)a+",
    ],
)
def test_syntax_python_reads_differently_gets_no_shortcut(pattern: str) -> None:
    re2_compile(pattern)  # every one is valid RE2
    if pattern not in ("[[]", "(?U)a+"):  # these two: Python warns / refuses (handled inside)
        assert not shared_syntax(pattern)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert required_literals(pattern) is None
        assert regex_literal(pattern) is None
    assert [str(w.message) for w in caught] == []  # no parse warning escapes


def test_shared_syntax_keeps_the_common_shortcuts() -> None:
    assert required_literals(r"\brm\s+-rf") == frozenset({"-rf"})
    assert required_literals(r"\x41bc") == frozenset({"Abc"})
    assert regex_literal(r"\.env") == ".env"


# -- a grammar of RE2 patterns, including the syntax Python reads differently ---------------

_ATOMS = st.sampled_from(
    [
        "a",
        "b",
        "1",
        "]",
        ":",
        "-",
        "}",
        "x",
        "é",
        ".",
        r"\.",
        r"\]",
        r"\[",
        r"\\",
        r"\d",
        r"\w",
        r"\s",
        r"\x41",
        r"\x{62}",
        "[ab]",
        "[^a]",
        "[]a]",
        "[a-c]",
        "[[:digit:]]",
        "[[:alpha:]]",
        "[a[:digit:]]",
        "[^[:space:]]",
        "[[:^digit:]]",
        r"[\d]",
        r"[\pN]",
        r"\pN",
        r"\PL",
        r"\pL",
        r"\p{Greek}",
        r"\p{^Greek}",
        r"\Q.*\E",
        r"\Qa]b\E",
        r"\Q[[:digit:]]\E",
        r"\C",
        "^",
        "$",
        r"\b",
        r"\A",
        r"\z",
    ]
)


def _patterns(children: Any) -> Any:
    repeat = st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{,2}", "{2,}"])
    return st.one_of(
        st.lists(children, min_size=2, max_size=4).map("".join),
        st.tuples(children, children).map("|".join),
        st.tuples(st.sampled_from(["(", "(?:", "(?i:", "(?s:"]), children).map(
            lambda t: f"{t[0]}{t[1]})"
        ),
        st.tuples(children, repeat).map("".join),
    )


patterns = st.tuples(
    st.sampled_from(["", "", "(?i)", "(?s)", "(?U)"]),
    st.recursive(_ATOMS, _patterns, max_leaves=6),
).map("".join)
values = st.lists(
    st.sampled_from(["a", "b", "ab", "1", "4111", "]", ":", "-", "}", "x", "é", "Ω", "[", "\n"])
    | st.text(max_size=3),
    max_size=8,
).map("".join)


def _valid(pattern: str) -> bool:
    try:
        re2_compile(pattern)
    except Exception:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(patterns.filter(_valid), st.lists(values, min_size=1, max_size=6))
@example("[[:digit:]]", ["5"])
@example("[[:digit:]]{16}", ["card 4111111111111111"])
@example("[a[:digit:]]x", ["5x"])
@example(r"\Q.*\E", [".*"])
def test_shortcuts_agree_with_plain_re2(pattern: str, texts: list[str]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predicate = search_predicate(pattern)
        literal = regex_literal(pattern)
        required = required_literals(pattern)
    assert [str(w.message) for w in caught] == []
    for text in texts:
        expected = re2.search(pattern, text) is not None
        assert predicate(text) is expected, (pattern, text)
        if literal is not None:
            assert (literal in text) is expected, (pattern, text)
        if expected and required is not None:
            assert any(lit in text for lit in required), (pattern, text)
        for requirement in all_requirements(pattern) if expected else []:
            assert any(lit in text for lit in requirement), (pattern, text)
        for requirement in all_requirements(pattern, folded=True) if expected else []:
            folded = "(?i)" + "|".join(re2.escape(lit) for lit in requirement)
            assert re2.search(folded, text) is not None, (pattern, text)
