"""A speed twin of the ``**`` rules' walk: whether such a rule may hold on one string, memoised.

A rule whose every branch is one ``**`` condition (``ToolRule.walks``) is decided by
``_walk_hit`` in the engine: it reads every string below the field, parses each as the field
class's kind says, and searches all its branches at once (``ToolRule.walk_any``); only where
that search holds on some parsed form are the branches checked one by one. ``WalkProbe`` runs
the same parse and the same search on one raw string, and remembers the answer per string
(a bounded cache: strings repeat across calls, file contents and commands most of all), so a
request none of whose strings may match costs a lookup per string. Pinned to the reference
(the engine without the probe) by ``tests/decide/test_probe.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import re2

from refusalkit._bounded import BoundedCache
from refusalkit.decide._fields import MISSING, Step, StepKind, run_steps
from refusalkit.decide._kinds import lexical_path_options, reads_the_host
from refusalkit.decide._regex import re2_compile

if TYPE_CHECKING:
    from refusalkit.decide._compile import CondSpec

__all__ = ["WalkProbe", "raw_strings", "string_forms"]

_UNANCHORED = re2._Anchor.UNANCHORED
_CACHE_LIMIT = 4096
_CACHED_LENGTH = 512  # longer strings are searched each time, never kept (the cache stays small)


def string_forms(text: str, after: tuple[Step, ...]) -> list[Any]:
    """What the conditions of a ``**`` path see of one string: its parsed form (two for a
    resolving path class), none when the kind cannot read it (docs/design/policy.md)."""
    if len(after) == 1 and after[0].kind is StepKind.PARSE:
        seen = after[0].arg(text)
    else:
        seen = run_steps(text, after) if after else text
    if type(seen) is list:
        return seen
    return [] if seen is MISSING else [seen]


def raw_strings(value: Any) -> list[str]:
    """Every string anywhere in a JSON value, in document order (``walk_strings`` without
    the paths, which only a matching string needs, and built only for what it visits)."""
    found: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return found


def _path_options(after: tuple[Step, ...]) -> Mapping[str, Any] | None:
    """The options of the parse the strings get: ``{}`` for none, a lexical path parse's
    options, None for any other kind (a URL's host or a resolved link is not in the text as
    written, so no needle screen applies)."""
    if not after:
        return {}
    if len(after) != 1 or after[0].kind is not StepKind.PARSE:
        return None
    return lexical_path_options(after[0].arg)


def _resolves(after: tuple[Step, ...]) -> bool:
    """Whether a step reads the host's filesystem (``resolve: true``: a link's target): its
    answer for a string may change between decisions, so it is never remembered."""
    return any(step.kind is StepKind.PARSE and reads_the_host(step.arg) for step in after)


def _screen(after: tuple[Step, ...], specs: tuple[CondSpec, ...]) -> Callable[[str], bool] | None:
    """One ``(?i)`` search for the needles of every branch (``Condition.needles``) over the
    strings joined by ``/``, case folded as the parse folds them; None when there is none."""
    options = _path_options(after)
    found: set[str] = set()
    for spec in specs:
        if spec.cond.needles is None:
            return None
        found |= spec.cond.needles
    if options is None or not found:
        return None
    match = re2_compile("(?i)" + "|".join(re2.escape(n) for n in sorted(found)))._regexp.Match
    fold, windows = bool(options.get("case_fold")), bool(options.get("windows"))

    def screen(text: str) -> bool:  # RE2's Match on UTF-8, as ``search_predicate`` calls it
        if windows:
            text = text.replace("\\", "/")
        data = (text.lower() if fold else text).encode("utf-8")
        found: bool = match(_UNANCHORED, data, 0, len(data))[0][0] != -1
        return found

    return screen


class WalkProbe:
    """Whether a ``**`` rule's ``walk_any`` may hold on some form of some string: first one
    needle screen over all the strings (``_screen``), then the search itself per string,
    remembered per string (a form that is no string, such as a parsed record, may hold, as
    in the engine)."""

    __slots__ = ("_after", "_cache", "_keep", "_screen", "maybe")

    def __init__(
        self, specs: tuple[CondSpec, ...], after: tuple[Step, ...], maybe: Callable[[str], bool]
    ) -> None:
        self._after = after
        self.maybe = maybe
        self._screen = _screen(after, specs)
        self._cache: BoundedCache[str, bool] = BoundedCache(_CACHE_LIMIT)
        self._keep = not _resolves(after)  # a link may be made or changed after a decision

    def holds(self, value: Any) -> bool:
        """Whether the probe holds on some string below ``value`` (``MISSING``: none).

        Flat arguments (an object of strings, numbers, booleans and nulls: the common call)
        are read in one loop: a remembered true string answers at once, the fresh ones go to
        ``_fresh``, and a value that is no string and holds none is passed over, as the walk
        passes it over."""
        if type(value) is not dict:
            return False if value is MISSING else self.any(raw_strings(value))
        get = self._cache.get
        fresh: list[str] = []
        for text in value.values():
            if type(text) is not str:
                if isinstance(text, dict | list | tuple):  # nested: every string, in order
                    return self.any(raw_strings(value))
                continue
            known = get(text)
            if known is None:
                fresh.append(text)
            elif known:
                return True
        return self._fresh(fresh) if fresh else False

    def cleared(self, text: str) -> bool:
        """Whether ``text`` is remembered as holding no match on any of its forms."""
        return self._cache.get(text) is False

    def any(self, texts: list[str]) -> bool:
        """Whether the probe holds on one of ``texts``: remembered strings first, then one
        screen over the others (a string it clears is remembered as false), then the search."""
        get = self._cache.get
        fresh: list[str] = []
        for text in texts:
            known = get(text)
            if known is None:
                fresh.append(text)
            elif known:
                return True
        return self._fresh(fresh) if fresh else False

    def _fresh(self, fresh: list[str]) -> bool:
        """Strings not remembered: one screen over all of them joined by ``/`` (no needle
        holds a ``/``, so none is made by the join), then the search string by string."""
        screen = self._screen
        if screen is not None and not screen(fresh[0] if len(fresh) == 1 else "/".join(fresh)):
            cache = self._cache
            for text in fresh:  # ``_remember``, inline: this is the common way out
                if len(text) <= _CACHED_LENGTH:
                    if len(cache) >= _CACHE_LIMIT:
                        cache.clear()
                    cache[text] = False
            return False
        return any(self._probe(text) for text in fresh)

    def _probe(self, text: str) -> bool:
        maybe = self.maybe
        found = any(type(v) is not str or maybe(v) for v in string_forms(text, self._after))
        self._remember((text,), found=found)
        return found

    def _remember(self, texts: Iterable[str], *, found: bool) -> None:
        if not self._keep:
            return
        for text in texts:
            if len(text) <= _CACHED_LENGTH:
                self._cache.put(text, found)
