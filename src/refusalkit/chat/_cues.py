"""Named RE2 cues matched together in one pass (an RE2::Set): which of them occur in a text.

Every detector and ethics predicate registers its patterns here. ``present(text)`` scans the text
once with all of them (one DFA pass, ~20 µs for 2,000 tokens) and is cached per text, so a
predicate asks "does cue X occur?" for free and runs its own pattern (for spans) only when it does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

__all__ = ["Cue", "cue", "matches", "present", "search_set", "utf8"]

_REGISTRY: dict[str, Any] = {}
_COMPILED: list[Any] = []  # [the RE2 Set], built on first use


@dataclass(frozen=True, slots=True)
class Cue:
    """A registered pattern: ``occurs`` asks the shared one-pass scan; ``finditer`` runs the
    pattern itself only when it occurs."""

    name: str
    rx: Any

    def occurs(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text``."""
        return self.name in present(text)

    def finditer(self, text: str) -> Iterator[Any]:
        """The pattern's matches (none without a scan when the cue does not occur)."""
        return iter(self.rx.finditer(text)) if self.occurs(text) else iter(())


def cue(name: str, pattern: str) -> Cue:
    """Register ``pattern`` under ``name``; return the compiled cue."""
    if name in _REGISTRY:
        raise ValueError(f"cue {name!r} is registered twice")
    compiled = re2.compile(pattern)
    _REGISTRY[name] = compiled
    _COMPILED.clear()
    present.cache_clear()
    return Cue(name, compiled)


def search_set(patterns: Iterable[str], options: Any = None) -> Any:
    """One compiled RE2 set of ``patterns``: ``Match(text)`` gives the indices that occur.

    A set's DFA gets 64 MiB unless ``options`` say otherwise (RE2's default is 8 MiB): its states
    are built lazily as new text is read, and a larger cache is flushed less often over a run of
    distinct turns."""
    if options is None:
        options = re2.Options()
        options.max_mem = 64 << 20
    matcher = re2.Set.SearchSet(options)
    for pattern in patterns:
        matcher.Add(pattern)
    matcher.Compile()
    return matcher


def utf8(text: str) -> bytes:
    """``text`` in UTF-8 (RFC 3629), encoded once for all the set passes over it: RE2 reads
    UTF-8, and a set given a ``str`` encodes the whole text again on every pass."""
    return _utf8(text) if type(text) is str else text.encode("utf-8")  # (a subclass: no cache)


@functools.lru_cache(maxsize=8)
def _utf8(text: str) -> bytes:
    return text.encode("utf-8")


def matches(matcher: Any, text: str) -> list[int]:
    """The indices of the patterns of ``matcher`` (a ``search_set``) that match in ``text``."""
    found: list[int] = matcher.Match(utf8(text)) or []
    return found


def _cue_set() -> tuple[Any, tuple[str, ...]]:
    if not _COMPILED:
        names = tuple(_REGISTRY)
        matcher = search_set(_REGISTRY[name].pattern for name in names)
        _COMPILED.extend([matcher, names])
    return _COMPILED[0], _COMPILED[1]


@functools.lru_cache(maxsize=64)
def present(text: str) -> frozenset[str]:
    """The names of the cues that occur anywhere in ``text``."""
    matcher, names = _cue_set()
    return frozenset(names[i] for i in matches(matcher, text))
