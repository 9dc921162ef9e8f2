"""The normalised view of a text, with a map from every view offset back to the original.

What a model can type around a pattern, a reader still reads as the secret: a zero-width space
inside a key, ``**AKIA**...`` bold splits, HTML entities, fullwidth letters, a key split over two
Markdown table cells, base64 wrapped over lines. The detectors run on this view as well as on the
original (docs/design/chat-guard.md, "The normalised view"); a finding in the view maps back to
the whole original span, so redaction replaces every character the secret was typed with.

The view is the original after these steps, in order:

1. invisible and format characters dropped (``INVISIBLE``: every Unicode ``Cf`` character, such
   as zero-width spaces and joiners, the word joiner, the soft hyphen and bidi controls, plus
   variation selectors, the combining grapheme joiner, tag characters and the Hangul fillers);
2. unless the text is NFKC-normalised and has no look-alike letters: each non-ASCII character
   folded by NFKC (Unicode Standard Annex #15), after mapping Cyrillic and Greek letters that
   look Latin to the Latin letter (a subset of Unicode TR 39's confusables);
3. HTML character references decoded (HTML Living Standard, 13.5, named ones with their ``;``);
4. inline HTML tags (``<b>``, ``<code>``, ``<span ...>``, ...) dropped;
5. Markdown marks dropped: every ``*`` and backtick, then every ``~~``, then the underscores of
   ``_emphasis_`` and ``__strong emphasis__`` on one line (CommonMark's delimiters at word edges);
6. a table-cell border (``|`` with the spaces around it) dropped where both sides continue a
   token (letters, digits, ``+/=_-``) and are not all digits (a table of numbers stays apart);
7. a line break dropped, with the next line's indentation, quote marks and comment leaders,
   after a line that ends in 16 or more base64 characters (base64, hex and PEM bodies), where
   the next line goes on with a token.

Each step is cheap where it has nothing to do (a substring test, or one C-level pass), so a plain
text costs a few substring tests and has no view. The map back is built only when a finding in
the view needs it, by replaying the same steps with offsets.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

import re2

__all__ = ["INVISIBLE", "View", "build"]

INVISIBLE = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE = re.compile(f"[{INVISIBLE}]+")
# Cyrillic and Greek letters a reader takes for Latin ones (Unicode TR 39 confusables, a subset)
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХЅІЈаеорсухѕіјԁһԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοντ",
    "ABEKMHOPCTXSIJaeopcyxsijdhqwABEZHIKMNOPTYXaovt",
)
_LOOKALIKE = "[" + "".join(map(chr, _LOOKALIKES)) + "]"
# Probes: does any such character occur? RE2's DFA answers in one pass over the UTF-8 text, about
# ten times faster than ``re``'s character-class scan on non-ASCII text.
_ANY_INVISIBLE = re2.compile(f"[{INVISIBLE}]")
_ANY_LOOKALIKE = re2.compile(_LOOKALIKE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")
_TAG = re.compile(
    r"<(?:/?(?:b|i|u|s|em|strong|code|kbd|mark|span|sub|sup|del|ins|tt|samp|var|font|small"
    r"|big)(?:\s[^<>\n]{0,200})?)>"
)
_MARKS = re.compile(r"[*`]+")
_STRIKE = re.compile(r"~~")
# CommonMark emphasis with underscores, ``_x_`` or ``__x__`` on one line: starts with the literal
# "_" so the search skips to underscores; the look-behinds check the opening edge
_EMPHASIS = re.compile(
    r"_(?:(?<=[\s(\[{\"'>]_)|(?<=^_))(?P<more>_?)(?P<body>[A-Za-z0-9](?:[^\n_]{0,200}?[A-Za-z0-9])?)"
    r"_(?P=more)(?=[\s)\]}\"'<.,;:!?]|$)",
    re.MULTILINE,
)
_PIPE = re.compile(r"\|")
_B64 = "[A-Za-z0-9+/=]{16}"
_BREAK = re.compile(
    rf"\n(?:(?<={_B64}\n)|(?<={_B64}\r\n)|(?<={_B64}\\\n)|(?<={_B64}\\\r\n))"
    r"[ \t>#*/\"'`|]*(?=[A-Za-z0-9+/=_-]{4})"
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")

_Edit = tuple[int, int, str]  # start, end, replacement
_Map = tuple[list[int], list[int]]  # per output character: its input span's start and end


def _fold(ch: str) -> str:
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", ch.translate(_LOOKALIKES)))


def _occurs(probe: Any, text: str) -> bool:
    """Whether ``probe`` (RE2) matches in the non-ASCII ``text``; a lone surrogate, which UTF-8
    cannot encode (``_detect`` replaces them first), is answered by the ``re`` twin."""
    try:
        return probe.search(text) is not None
    except UnicodeEncodeError:
        return re.search(probe.pattern, text) is not None


def _has_invisible(text: str) -> bool:
    return not text.isascii() and _occurs(_ANY_INVISIBLE, text)


def _invisible_edits(text: str) -> Iterator[_Edit]:
    if _has_invisible(text):
        for m in _INVISIBLE.finditer(text):
            yield m.start(), m.end(), ""


def _fold_edits(text: str) -> Iterator[_Edit]:
    if text.isascii():
        return
    if unicodedata.is_normalized("NFKC", text) and not _occurs(_ANY_LOOKALIKE, text):
        return
    for m in _NON_ASCII.finditer(text):
        for i, ch in enumerate(m.group(0), m.start()):
            folded = _fold(ch)
            if folded != ch:
                yield i, i + 1, folded


def _entity_edits(text: str) -> Iterator[_Edit]:
    if "&" in text:
        for m in _ENTITY.finditer(text):
            decoded = html.unescape(m.group(0))
            if decoded != m.group(0):
                yield m.start(), m.end(), "".join(map(_fold, decoded))


def _deletions(rx: re.Pattern[str], probe: str) -> Callable[[str], Iterator[_Edit]]:
    def edits(text: str) -> Iterator[_Edit]:
        if probe in text:
            for m in rx.finditer(text):
                yield m.start(), m.end(), ""

    return edits


def _emphasis_edits(text: str) -> Iterator[_Edit]:
    if "_" in text:
        for m in _EMPHASIS.finditer(text):
            yield m.start(), m.start("body"), ""
            yield m.end("body"), m.end(), ""


def _mark_edits(text: str) -> Iterator[_Edit]:
    if "*" in text or "`" in text:
        for m in _MARKS.finditer(text):
            yield m.start(), m.end(), ""


def _joins(text: str, start: int, end: int) -> bool:
    """Both sides continue a token, and they are not all digits (a table of numbers)."""
    left, right = text[max(0, start - 4) : start], text[end : end + 4]
    if len(left) < 4 or len(right) < 4 or not set(left + right) <= _TOKEN_CHARS:
        return False
    return not (left + right).isdigit()


def _cell_edits(text: str) -> Iterator[_Edit]:
    if "|" not in text:
        return
    for m in _PIPE.finditer(text):
        start, end = m.start(), m.end()
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        while end < len(text) and text[end] in " \t":
            end += 1
        if _joins(text, start, end):
            yield start, end, ""


def _break_edits(text: str) -> Iterator[_Edit]:
    if "\n" not in text:
        return
    for m in _BREAK.finditer(text):
        start = m.start()
        while start > 0 and text[start - 1] in "\r\\":
            start -= 1
        if not _word(text[max(0, start - 16) : start]) and _continues(text, m.end()):
            yield start, m.end(), ""


def _continues(text: str, start: int) -> bool:
    """The next line goes on with a token and nothing else (base64 does; prose does not)."""
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)].rstrip(" \t\r\\\"'`,;")
    return set(line) <= _TOKEN_CHARS and not _word(line)


def _word(run: str) -> bool:
    """A long word (lower, upper or capitalised letters), not a line of base64."""
    return run.isalpha() and (run.islower() or run.isupper() or run[1:].islower())


_STEPS: tuple[Callable[[str], Iterator[_Edit]], ...] = (
    _invisible_edits,
    _fold_edits,
    _entity_edits,
    _deletions(_TAG, "<"),
    _mark_edits,
    _deletions(_STRIKE, "~~"),
    _emphasis_edits,
    _cell_edits,
    _break_edits,
)


def _apply(text: str, edits: list[_Edit], mapped: bool) -> tuple[str, _Map | None]:
    """``text`` with ``edits`` (in order, not overlapping) applied, and optionally the map."""
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cursor = 0
    for start, end, piece in edits:
        parts += [text[cursor:start], piece]
        if mapped:
            starts.extend(range(cursor, start))
            ends.extend(range(cursor + 1, start + 1))
            starts.extend([start] * len(piece))
            ends.extend([end] * len(piece))
        cursor = end
    parts.append(text[cursor:])
    if not mapped:
        return "".join(parts), None
    starts.extend(range(cursor, len(text)))
    ends.extend(range(cursor + 1, len(text) + 1))
    return "".join(parts), (starts, ends)


def _compose(outer: _Map | None, inner: _Map) -> _Map:
    """``inner`` maps into the text that ``outer`` maps into the original."""
    if outer is None:
        return inner
    starts, ends = outer
    return [starts[s] for s in inner[0]], [ends[e - 1] for e in inner[1]]


class View:
    """The view's text, and (built on first use) each view character's original span."""

    __slots__ = ("_map", "original", "text")

    def __init__(self, original: str, text: str) -> None:
        self.original = original
        self.text = text
        self._map: _Map | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the view's ``[start, end)``: every character it was typed with."""
        starts, ends = self._built()
        if end <= start:
            origin = starts[start] if start < len(starts) else len(self.original)
            return origin, origin
        return starts[start], ends[end - 1]

    def _built(self) -> _Map:
        if self._map is None:
            text, total = self.original, None
            for step in _STEPS:
                edits = list(step(text))
                if edits:
                    text, inner = _apply(text, edits, mapped=True)
                    assert inner is not None
                    total = _compose(total, inner)
            n = len(self.original)
            self._map = total or (list(range(n)), list(range(1, n + 1)))
        return self._map


# Steps that only delete what one regular expression matches, done in one C-level pass when
# no map is wanted (the same deletions as their edits, so the view text is the same).
_FAST: dict[Callable[[str], Iterator[_Edit]], Callable[[str], str]] = {
    _invisible_edits: lambda t: _INVISIBLE.sub("", t) if _has_invisible(t) else t,
    _mark_edits: lambda t: t.replace("*", "").replace("`", ""),
}


def build(text: str) -> View | None:
    """The normalised view of ``text``, or ``None`` when it would equal ``text``."""
    current = text
    for step in _STEPS:
        fast = _FAST.get(step)
        if fast is not None:
            current = fast(current)
            continue
        edits = list(step(current))
        if edits:
            current = _apply(current, edits, mapped=False)[0]
    return None if current == text else View(text, current)
