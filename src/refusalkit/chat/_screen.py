r"""Screens: wider forms of the patterns, for the RE2 set passes that pick which patterns run.

A set pass only asks whether a pattern can match somewhere in a text; the patterns it names then
run for their spans. So a set may hold each pattern's *screen*: a pattern that matches wherever
the original does (its language is a superset of the original's) and whose DFA has far fewer
states. RE2's DFA tells apart every position inside a bounded repetition (after ``use`` in prose,
``[^\s]{6,200}`` is a new state at each character of the next word, times the other patterns'
states), and on a turn that follows another program's work each state it reaches is a cache
miss. Two rewrites, each only ever widening:

1. a bounded repetition ``{m,n}`` with ``n - m >= 4``, outside character classes, becomes
   ``{m,}``;
2. a leading ``[...]{0,n}`` or ``[...]{0,n}?`` (gitleaks' ``[\w.-]{0,50}?`` before a keyword) is
   dropped: a match of the original ends with a match of the rest.

A screen that matches where its pattern does not costs only that pattern's own search, never a
finding (``tests/chat/test_speed_twins.py`` pins the set passes to running every pattern, and
each screen to matching wherever its pattern does).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["screen"]

_WIDE = 4  # the narrowest bounded repetition worth widening
_BOUNDED = re.compile(r"\{(\d+),(\d+)\}")
_FLAGS = re.compile(r"(?:\(\?[a-zA-Z]+\))?")
_LEADING = re.compile(r"^(\(\?[a-zA-Z]+\))?\[(?:\\.|[^\]\\])*\]\{0,\d*\}\??")


def screen(pattern: str) -> str:
    """A pattern (RE2 syntax) that matches wherever ``pattern`` matches, with fewer DFA states."""
    widened = "".join(_widened(pattern))
    rest = _LEADING.sub(lambda m: m.group(1) or "", widened, count=1)
    return widened if _FLAGS.fullmatch(rest) else rest  # (nothing left but flags: keep it)


def _widened(pattern: str) -> Iterator[str]:
    start = 0
    while start < len(pattern):
        end = _token_end(pattern, start)
        token = pattern[start:end]
        bounded = _BOUNDED.fullmatch(token)
        if bounded and int(bounded[2]) - int(bounded[1]) >= _WIDE:
            token = "{" + bounded[1] + ",}"
        yield token
        start = end


def _token_end(pattern: str, start: int) -> int:
    """Where the token at ``start`` ends: an escape, a character class, a repetition or a
    single character."""
    char = pattern[start]
    if char == "\\":
        return _escape_end(pattern, start)
    if char == "[":
        return _class_end(pattern, start)
    bounded = _BOUNDED.match(pattern, start)
    return bounded.end() if bounded else start + 1


def _escape_end(pattern: str, start: int) -> int:
    """``\\x{2019}``, ``\\p{Greek}`` and ``\\pL`` are one token; any other escape is two
    characters."""
    if pattern[start + 1 : start + 2] in ("x", "p", "P") and pattern[start + 2 : start + 3] == "{":
        return pattern.index("}", start) + 1
    if pattern[start + 1 : start + 2] in ("p", "P"):
        return start + 3
    return start + 2


def _class_end(pattern: str, start: int) -> int:
    """The end of the character class opening at ``start`` (``[^]...]``, ``[[:alpha:]]``,
    escapes inside)."""
    at = start + 1
    at += pattern.startswith("^", at)
    at += pattern.startswith("]", at)
    while pattern[at] != "]":
        if pattern[at] == "\\":
            at = _escape_end(pattern, at)
        elif pattern.startswith("[:", at):
            at = pattern.index(":]", at) + 2
        else:
            at += 1
    return at + 1
