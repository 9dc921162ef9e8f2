"""Redaction of turn text before it leaves the runtime (docs/design/decision.md, Redaction;
docs/design/chat.md).

Every span the shared scanner (``_scan``) finds in a text (credentials: class ``secret:<kind>``;
personal data, whoever supplied it: class ``private-data:<kind>``) is replaced by its keyed
redaction token, ``Redactor.token(class, value)``. Keyed, not salted: a reader of the output
cannot test guesses, while the same value still gives the same token, so occurrences correlate.
Personal data is tokenised by its normalised value (a card with or without spaces, one token).

A ``Scrubber`` applies this to texts and to JSON values (dicts, lists, strings). With
``raw=True`` (``record_text``) texts pass unchanged: the deployment's explicit choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusalkit._bounded import BoundedCache
from refusalkit.chat._scan import redact
from refusalkit.redact import Redactor

__all__ = ["Scrubber", "redact_text"]


def redact_text(text: str, redactor: Redactor) -> str:
    """``text`` with every detected secret and personal-data span replaced by its token (the
    shared scanner, ``refusalkit.chat.redact``). A text the detectors cannot scan is replaced
    whole (fail closed: nothing unchecked leaves). The result is valid Unicode."""
    return redact(text, redactor)[0]


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
