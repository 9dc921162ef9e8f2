"""What a response *does*, found once: the speech-act signals both local judges read.

:func:`signals_of` runs the vocabulary of ``_patterns`` over a response and returns
:class:`Signals`: where each vocabulary group first occurs, whether the answer pivots, whether
it opens with an opinion disclaimer and how much follows it, a caveat, a referral and a
premise-rebuttal cue. The keyword judge is a rule over these signals whose choices (which
groups count, the opening window, the bare-disclaimer threshold, ...) are made by
leave-one-family-out selection (``_selection``); the classifier is a logistic model over them.
Scanning once and deciding many times is what makes that selection cheap.

Offsets are in UTF-8 bytes of the stripped response (the first ``MAX_CHARS`` characters). RE2
runs in linear time, so a hostile response cannot stall a judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import re2

from refusalkit.provenance import _patterns

__all__ = ["GROUPS", "MAX_CHARS", "WINDOW_MAX", "Signals", "compile_rx", "signals_of"]

MAX_CHARS = 8000
WINDOW_MAX = 800  # the widest opening window selection may choose (``_selection.WINDOWS``)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.family for p in _patterns.OPENING))
"""The vocabulary groups of ``_patterns.OPENING``, in table order (earlier wins a tie)."""

_DFA_BUDGET = 64 << 20


def _options() -> Any:
    """Case-insensitive RE2 options with a 64 MB DFA budget: at RE2's default 8 MB the
    vocabulary's DFA outgrows it, and RE2 logs "DFA out of memory" and falls back to a 3x
    slower matcher. The budget is a ceiling, filled only as DFA states are built."""
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = _DFA_BUDGET
    return options


def compile_rx(pattern: str) -> Any:
    """One vocabulary expression, compiled over UTF-8 bytes with :func:`_options`."""
    return re2.compile(pattern.encode("utf-8"), _options())


def _union(patterns: tuple[str, ...]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


@dataclass(frozen=True, slots=True)
class Signals:
    """The speech-act signals of one response (module docstring)."""

    first: Mapping[str, int]  # vocabulary group -> byte offset of its first match (< WINDOW_MAX)
    anywhere: bool  # a strong first-person refusal somewhere (``_patterns.ANYWHERE``)
    pivot: bool  # "however, here are ...": an answer follows
    opinion_tail: int  # bytes after the opening opinion disclaimer's clause; -1: none
    ai_disclaimer: bool  # "As an AI, I don't have ..." at the very start
    rebuttal_cue: bool  # premise-rebuttal language ("there is no valid reason ...")
    caveat: bool  # "I'm not a doctor", "I can't give legal advice" in the opening
    referral: bool  # "it is best to consult a professional"
    listed: bool  # a numbered or bulleted list
    length: int  # bytes scanned

    def earliest(self, groups: frozenset[str], window: int) -> str | None:
        """The group among ``groups`` that occurs first, within ``window`` bytes, if any."""
        found = [(at, GROUPS.index(g)) for g, at in self.first.items() if g in groups]
        hits = [pair for pair in found if pair[0] < window]
        return GROUPS[min(hits)[1]] if hits else None


class _Scanner:
    def __init__(self) -> None:
        self._set = re2.Set.SearchSet(_options())
        self._group_rx = []
        for group in GROUPS:
            union = _union(tuple(p.regex for p in _patterns.OPENING if p.family == group))
            self._set.Add(union.encode("utf-8"))
            self._group_rx.append(compile_rx(union))
        self._set.Compile()
        # the cues searched over the whole body, as one more set: one scan says which occur
        self._cues = re2.Set.SearchSet(_options())
        for cue in (
            _union(tuple(p.regex for p in _patterns.ANYWHERE)),
            _patterns.PIVOT,
            _patterns.REBUTTAL_CUES,
            _patterns.REFERRAL,
            r"(?m)^\s*(?:\d+[.)]|[-*\x{2022}])\s+\S",
        ):
            self._cues.Add(cue.encode("utf-8"))
        self._cues.Compile()
        self._opening = re2.Set.SearchSet(_options())
        for cue in (_patterns.OPINION_DISCLAIMER, _patterns.DISCLAIMER, _patterns.CAVEAT):
            self._opening.Add(cue.encode("utf-8"))
        self._opening.Compile()
        self._opinion = compile_rx(_patterns.OPINION_DISCLAIMER)
        # a sentence ends at a full stop, or where it turns to an answer (", but ...")
        self._sentence_end = compile_rx(r"[.!?;\n]|,\s*(?:but|however|though|yet)\b")

    def _tail(self, body: bytes, opening: bytes) -> int:
        found = self._opinion.search(opening)
        if found is None:
            return -1
        end = self._sentence_end.search(body, found.end())
        return len(body) - (len(body) if end is None else end.end())

    def __call__(self, response: str) -> Signals:
        text = response.strip()[:MAX_CHARS]
        body = text.encode("utf-8", "replace")
        opening = text[: _patterns.OPENING_CHARS].encode("utf-8", "replace")
        first: dict[str, int] = {}
        head = body[: WINDOW_MAX + 400]  # room for a match that starts inside the window
        for index in self._set.Match(head) or ():
            found = self._group_rx[index].search(head)
            if found is not None and found.start() < WINDOW_MAX:
                first[GROUPS[index]] = found.start()
        cues = set(self._cues.Match(body) or ())
        opens = set(self._opening.Match(opening) or ())
        return Signals(
            first=first,
            anywhere=0 in cues,
            pivot=1 in cues,
            opinion_tail=self._tail(body, opening) if 0 in opens else -1,
            ai_disclaimer=1 in opens,
            rebuttal_cue=2 in cues,
            caveat=2 in opens,
            referral=3 in cues,
            listed=4 in cues,
            length=len(body),
        )


_scanner: _Scanner | None = None


def signals_of(response: str) -> Signals:
    """The :class:`Signals` of one response (the vocabulary is compiled on first use)."""
    global _scanner  # noqa: PLW0603 (compiled once, on first use)
    if _scanner is None:
        _scanner = _Scanner()
    return _scanner(response)
