"""Redaction of turn text before it leaves the runtime (docs/design/decision.md, Redaction;
docs/design/chat.md).

Every span the safety detectors find in a text (credentials: class ``secret:<kind>``; personal
data, whoever supplied it: class ``private-data:<kind>``) is replaced by its keyed redaction token,
``Redactor.token(class, value)``. Keyed, not salted: a reader of the output cannot test guesses,
while the same value still gives the same token, so occurrences correlate. Personal data is
tokenised by its normalised value (a card with or without spaces, one token).

A ``Scrubber`` applies this to texts and to JSON values (dicts, lists, strings). With
``raw=True`` (``record_text``) texts pass unchanged: the deployment's explicit choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusalkit._bounded import BoundedCache
from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._untrusted import clean_text
from refusalkit.redact import Redactor

__all__ = ["Scrubber", "redact_text"]

_Span = tuple[int, int, str, str]  # start, end, field class, value


def _spans(text: str) -> list[_Span]:
    spans = [
        (f.start, f.end, f"secret:{f.kind}", text[f.start : f.end]) for f in find_secrets(text)
    ]
    spans += [(f.start, f.end, f"private-data:{f.kind}", f.value) for f in find_private_data(text)]
    # No exemption for text that looks like a token: a model could wrap a card number in one.
    return sorted(spans, key=lambda s: (s[0], -s[1]))


def _merged(spans: list[_Span], text: str) -> list[_Span]:
    """Overlapping spans become one, tokenised by the first span's class and the merged text."""
    out: list[_Span] = []
    for span in spans:
        if out and span[0] < out[-1][1]:
            start, end, klass, _ = out[-1]
            if span[1] > end:
                out[-1] = (start, span[1], klass, text[start : span[1]])
            continue
        out.append(span)
    return out


def redact_text(text: str, redactor: Redactor) -> str:
    """``text`` with every detected secret and personal-data span replaced by its token. A text
    the detectors cannot scan is replaced whole (fail closed: nothing unchecked leaves). The result
    is valid Unicode: a lone surrogate becomes U+FFFD."""
    if not text.isascii():
        text = clean_text(text)
    try:
        spans = _spans(text)
    except Exception:  # noqa: BLE001 - redaction never fails open
        return redactor.token("unscanned", clean_text(text))
    if not spans:
        return text
    parts, cursor = [], 0
    for start, end, klass, value in _merged(spans, text):
        parts += [text[cursor:start], redactor.token(klass, value)]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


class Scrubber:
    """Redacts texts and JSON values with one redactor; ``raw=True`` leaves texts as they are."""

    __slots__ = ("_memo", "raw", "redactor")

    _MEMO_TEXT = 256  # short strings (ids, kinds, reasons, digests) repeat every turn: memoised
    _MEMO_SIZE = 1024

    def __init__(self, redactor: Redactor, *, raw: bool = False) -> None:
        self.redactor = redactor
        self.raw = raw
        self._memo: BoundedCache[str, str] = BoundedCache(self._MEMO_SIZE)

    def text(self, text: str) -> str:
        """A text that leaves the runtime (a surface, an articulation)."""
        return text if self.raw else redact_text(text, self.redactor)

    def always(self, text: str) -> str:
        """A text that is never meant to carry turn text (evidence, an error): always redacted."""
        if len(text) > self._MEMO_TEXT:
            return redact_text(text, self.redactor)
        done = self._memo.get(text)
        if done is None:
            done = self._memo.put(text, redact_text(text, self.redactor))
        return done

    def value(self, obj: Any, *, always: bool = False) -> Any:
        """A JSON value with every string redacted (``always`` ignores ``raw``)."""
        if isinstance(obj, str):
            return self.always(obj) if always else self.text(obj)
        if obj is None or isinstance(obj, bool | int | float):
            return obj
        if isinstance(obj, dict | Mapping):
            return {k: self.value(v, always=always) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v, always=always) for v in obj]
        return obj
