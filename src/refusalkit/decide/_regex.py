"""RE2 searches without the wrapper's per-call overhead, behind a literal prefilter.

Policies run regexes on untrusted input, so they use RE2 (linear time, docs/design/policy.md). The
``google-re2`` wrapper spends most of a call in Python; we call the compiled ``RE2.Match``
directly on UTF-8 bytes. Before that, a *prefilter* (as RE2's own ``FilteredRE2`` does) checks
literals that every match must contain: a value lacking all of them cannot match. The literals
come from Python's parse of the pattern, conservatively: only top-level, case-sensitive runs,
mandatory groups, repeats with a minimum of one, and alternations where every branch has one.

Python's parser is not RE2's: it reads ``[[:digit:]]`` as a set and a literal ``]``, and does
not know ``\\pN``, ``\\Q..\\E`` or ``\\C``. A shortcut built on a misparse would skip RE2 and
fail open, so both shortcuts run only on patterns in the syntax the two engines share
(``shared_syntax``: a whitelist of escapes, no POSIX-style ``[:``/``[=``/``[.``, no ``{,n}``)
and that Python parses without any warning; every other pattern goes to RE2 alone.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable
from typing import Any

import re2

from refusalkit.decide._warnings import warnings_as

__all__ = [
    "all_requirements",
    "re2_compile",
    "regex_literal",
    "required_literals",
    "search_predicate",
    "shared_syntax",
]

_UNANCHORED = re2._Anchor.UNANCHORED
_ANCHOR_BOTH = re2._Anchor.ANCHOR_BOTH
_parser: Any = getattr(re, "_parser", None)
_constants: Any = getattr(re, "_constants", None)

Requirement = frozenset[str]
_MEMO = 4096  # patterns whose analysis is kept: a pack's conditions ask it several times each


def re2_compile(pattern: str) -> Any:
    """Compile with RE2 without its stderr logging; raises ``re2.error`` on a bad pattern."""
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    return re2.compile(pattern, options)


def _best(reqs: list[Requirement]) -> Requirement | None:
    """The requirement whose shortest literal is longest (the most selective)."""
    return max(reqs, key=lambda r: min(map(len, r)), default=None)


def _requirements(items: Any, c: Any) -> list[Requirement]:
    out: list[Requirement] = []
    run = ""
    for op, arg in items:
        if op is c.LITERAL:
            run += chr(arg)
            continue
        words = _words(arg[1], c) if op is c.BRANCH and run else None
        if words is not None:  # ``\.p(?:12|fx)``: every match holds ``.p12`` or ``.pfx``
            out.append(frozenset(run + word for word in words))
            run = ""
            continue
        if run:
            out.append(frozenset([run]))
            run = ""
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, sub = arg
            if not add_flags and not del_flags:
                out.extend(_requirements(sub, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
            out.extend(_requirements(arg[2], c))
        elif op is c.BRANCH:
            options = [_best(_requirements(alt, c)) for alt in arg[1]]
            if options and all(o is not None for o in options):
                out.append(frozenset().union(*(o for o in options if o is not None)))
    if run:
        out.append(frozenset([run]))
    return out


def _words(alternatives: list[Any], c: Any) -> list[str] | None:
    """The texts of an alternation whose every branch is a plain run of literals, else None."""
    words = []
    for alternative in alternatives:
        if not all(op is c.LITERAL for op, _ in alternative):
            return None
        words.append("".join(chr(arg) for _, arg in alternative))
    return words


# Escapes that both RE2 and Python read as the escaped character itself.
_LITERAL_ESCAPES = frozenset(string.punctuation + " \t\n\r\x0b\x0c")
# Letter escapes with one meaning in both (RE2 syntax vs Python ``re``); ``\\x`` needs two hex
# digits. Digits (octal/backreferences), ``\\p``, ``\\Q``, ``\\C``, ``\\z``, ... are not here.
_SHARED_LETTER_ESCAPES = frozenset("dDwWsSbBAfnrtv")
_HEX = frozenset(string.hexdigits)
# RE2 reads these as POSIX classes (``[[:alpha:]]``) or a literal; Python as a nested ``[``.
# ``{,n}`` is a literal in RE2 and a repeat in Python.
_DISPUTED = ("[:", "[=", "[.", "{,")


def shared_syntax(pattern: str) -> bool:
    """True when ``pattern`` uses only syntax that RE2 and Python ``re`` parse alike.

    A whitelist: every escape is punctuation, whitespace, one of ``\\d \\D \\w \\W \\s \\S
    \\b \\B \\A \\f \\n \\r \\t \\v`` or ``\\xHH``, and no POSIX-style bracket or ``{,`` occurs.
    """
    if any(text in pattern for text in _DISPUTED):
        return False
    slash = pattern.find("\\")
    while slash != -1:
        escaped = pattern[slash + 1 : slash + 2]
        if escaped == "x":
            digits = pattern[slash + 2 : slash + 4]
            if len(digits) != 2 or not _HEX.issuperset(digits):
                return False
        elif escaped not in _LITERAL_ESCAPES and escaped not in _SHARED_LETTER_ESCAPES:
            return False
        slash = pattern.find("\\", slash + 2)
    return True


@functools.lru_cache(maxsize=64)
def _python_parse(pattern: str) -> Any:
    """Python's parse of a ``shared_syntax`` pattern, or None (any error or warning).

    The last few are kept (the literal shortcut, the prefilter and the needles of one condition
    each read it, one after the other); a parse is only read, never changed."""
    if _parser is None or _constants is None or not shared_syntax(pattern):
        return None
    with warnings_as("error"):
        try:
            return _parser.parse(pattern)
        except Exception:  # noqa: BLE001 (unparsed, or parsed with a warning: no shortcut)
            return None


def required_literals(pattern: str, *, folded: bool = False) -> Requirement | None:
    """Literals of which every match of ``pattern`` contains at least one; None if unknown.

    ``folded``: a pattern with a leading ``(?i)`` is read too, and then its match contains one
    of the literals up to RE2's case folding (search for them with ``(?i)``, never as written).
    """
    found = all_requirements(pattern, folded=folded)
    return _best(found) if found else None


def all_requirements(pattern: str, *, folded: bool = False) -> list[Requirement]:
    """Every requirement of ``pattern`` (each a set of literals of which a match holds one),
    most selective first; empty when none is known (``required_literals`` keeps the best)."""
    return list(_all_requirements(pattern, folded))


@functools.lru_cache(maxsize=_MEMO)
def _all_requirements(pattern: str, folded: bool) -> tuple[Requirement, ...]:
    parsed = _python_parse(pattern)
    if parsed is None:
        return ()
    flags = _constants.SRE_FLAG_VERBOSE
    if not folded:
        flags |= _constants.SRE_FLAG_IGNORECASE
    if parsed.state.flags & flags:
        return ()
    found = [r for r in _requirements(list(parsed), _constants) if r and all(r)]
    return tuple(sorted(found, key=lambda r: -min(map(len, r))))


@functools.lru_cache(maxsize=_MEMO)
def regex_literal(pattern: str) -> str | None:
    """The text that ``pattern`` matches exactly when it is a plain literal, else None.

    Conservative: every backslash escapes ASCII punctuation or whitespace (never a letter or
    digit, where RE2 and Python differ), the syntax is shared (``shared_syntax``), no flags,
    and Python parses nothing but literals, with no warning. An
    unanchored search for such a pattern is a substring test (UTF-8 is self-synchronising).
    """
    slash = pattern.find("\\")
    while slash != -1:
        if pattern[slash + 1 : slash + 2] not in _LITERAL_ESCAPES:
            return None
        slash = pattern.find("\\", slash + 2)
    parsed = _python_parse(pattern)
    if parsed is None:
        return None
    if parsed.state.flags & ~_constants.SRE_FLAG_UNICODE:
        return None
    items = list(parsed)
    if any(op is not _constants.LITERAL for op, _ in items):
        return None
    return "".join(chr(arg) for _, arg in items)


def search_predicate(pattern: str, *, anchored: bool = False) -> Callable[[str], bool]:
    """A predicate: does RE2 ``pattern`` match somewhere in the value (or all of it)?"""
    regex = re2_compile(pattern)
    match = regex._regexp.Match
    anchor = _ANCHOR_BOTH if anchored else _UNANCHORED
    literal = None if anchored else regex_literal(pattern)
    if literal is not None:
        return _contains(literal) if literal else _always
    required = all_requirements(pattern)

    def search(value: str) -> bool:
        data = value.encode("utf-8")
        found: bool = match(anchor, data, 0, len(data))[0][0] != -1
        return found

    if not required:
        return search
    if len(required) == 1 and len(required[0]) == 1:
        (literal,) = required[0]
        return lambda value: literal in value and search(value)
    return _guarded(required, search)


def _guarded(required: list[Requirement], search: Callable[[str], bool]) -> Callable[[str], bool]:
    """``search`` behind every requirement: ``/workspace/[^/]*/deploy/`` is asked only of
    values holding both ``/workspace/`` and ``/deploy/`` (the first alone is in every path)."""
    singles = tuple(lit for r in required if len(r) == 1 for lit in r)
    choices = tuple(tuple(r) for r in required if len(r) > 1)

    def guarded(value: str) -> bool:
        for literal in singles:
            if literal not in value:
                return False
        for literals in choices:
            if not any(lit in value for lit in literals):
                return False
        return search(value)

    return guarded


def _always(_value: str) -> bool:
    return True


def _contains(literal: str) -> Callable[[str], bool]:
    return lambda value: literal in value
