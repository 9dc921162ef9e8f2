"""Path globs compiled once: ``*`` stops at ``/``, ``**`` crosses it (docs/design/policy.md,
Conditions).

A glob matches the whole value, newlines included. ``?`` is one character other than ``/``;
``[...]`` is not special (paths contain brackets). ``**/`` also matches no directory at all, so
``**/.env`` matches ``.env``. Common shapes (literal, ``prefix/**``, ``**/name``) get a
string-method fast path; the rest run on
RE2, which is linear in the input whatever the pattern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import re2

from refusalkit.decide._regex import search_predicate

__all__ = ["compile_glob", "glob_to_regex"]

_META = frozenset("*?")


@functools.lru_cache(maxsize=4096)
def glob_to_regex(glob: str) -> str:
    """The anchored RE2 regex equivalent of ``glob``.

    ``(?s)``: a value is a string, not a line, so ``**`` crosses ``\\n`` (as the string-method
    fast paths do); ``*`` and ``?`` still stop only at ``/``. Kept per glob: a condition asks
    for it when it compiles the glob and again for its combined pattern.
    """
    parts = _WILDCARDS.split(glob)  # literal runs at even places, wildcards at odd ones
    out = [_WILDCARD_REGEX[part] if i % 2 else re2.escape(part) for i, part in enumerate(parts)]
    return "(?s)^" + "".join(out) + "$"


_WILDCARDS = re.compile(r"(\*\*/|\*\*|\*|\?)")
_WILDCARD_REGEX = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def _literal(text: str) -> bool:
    return not (_META & set(text))


def compile_glob(glob: str) -> Callable[[str], bool]:
    """A predicate telling whether a string matches ``glob`` in full."""
    if _literal(glob):
        return glob.__eq__
    if glob.endswith("/**") and _literal(glob[:-3]):
        return _startswith(glob[:-2])
    if glob.startswith("**/") and _literal(glob[3:]):
        return _endswith(glob[3:])
    return search_predicate(glob_to_regex(glob))


def _startswith(prefix: str) -> Callable[[str], bool]:
    return lambda value: value.startswith(prefix)


def _endswith(name: str) -> Callable[[str], bool]:
    tail = "/" + name
    return lambda value: value == name or value.endswith(tail)
