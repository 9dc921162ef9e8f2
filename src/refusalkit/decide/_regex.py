"""RE2 searches without the wrapper's per-call overhead, behind a literal prefilter.

Policies run regexes on untrusted input, so they use RE2 (linear time, DESIGN.md §2). The
``google-re2`` wrapper spends most of a call in Python; we call the compiled ``RE2.Match``
directly on UTF-8 bytes. Before that, a *prefilter* (as RE2's own ``FilteredRE2`` does) checks
literals that every match must contain: a value lacking all of them cannot match. The literals
come from Python's parse of the pattern, conservatively: only top-level, case-sensitive runs,
mandatory groups, repeats with a minimum of one, and alternations where every branch has one.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

import re2

__all__ = ["re2_compile", "regex_literal", "required_literals", "search_predicate"]

_UNANCHORED = re2._Anchor.UNANCHORED
_ANCHOR_BOTH = re2._Anchor.ANCHOR_BOTH
_parser: Any = getattr(re, "_parser", None)
_constants: Any = getattr(re, "_constants", None)

Requirement = frozenset[str]


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


def required_literals(pattern: str) -> Requirement | None:
    """Literals of which every match of ``pattern`` contains at least one; None if unknown."""
    if _parser is None or _constants is None:
        return None
    try:
        parsed = _parser.parse(pattern)
    except Exception:  # noqa: BLE001 (a pattern Python cannot parse gets no prefilter)
        return None
    if parsed.state.flags & (_constants.SRE_FLAG_IGNORECASE | _constants.SRE_FLAG_VERBOSE):
        return None
    best = _best([r for r in _requirements(list(parsed), _constants) if all(r)])
    return best if best else None


# Escapes that both RE2 and Python read as the escaped character itself.
_LITERAL_ESCAPES = frozenset(string.punctuation + " \t\n\r\x0b\x0c")


def regex_literal(pattern: str) -> str | None:
    """The text that ``pattern`` matches exactly when it is a plain literal, else None.

    Conservative: every backslash escapes ASCII punctuation or whitespace (never a letter or
    digit, where RE2 and Python differ), no flags, and Python parses nothing but literals. An
    unanchored search for such a pattern is a substring test (UTF-8 is self-synchronising).
    """
    if _parser is None or _constants is None:
        return None
    slash = pattern.find("\\")
    while slash != -1:
        if pattern[slash + 1 : slash + 2] not in _LITERAL_ESCAPES:
            return None
        slash = pattern.find("\\", slash + 2)
    try:
        parsed = _parser.parse(pattern)
    except Exception:  # noqa: BLE001 (not a pattern Python reads: not a literal either)
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
    required = required_literals(pattern)

    def search(value: str) -> bool:
        data = value.encode("utf-8")
        found: bool = match(anchor, data, 0, len(data))[0][0] != -1
        return found

    if required is None:
        return search
    if len(required) == 1:
        (literal,) = required
        return lambda value: literal in value and search(value)
    literals = tuple(required)
    return lambda value: any(lit in value for lit in literals) and search(value)


def _always(_value: str) -> bool:
    return True


def _contains(literal: str) -> Callable[[str], bool]:
    return lambda value: literal in value
