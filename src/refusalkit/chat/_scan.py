"""The shared scanner: credentials and personal data in a text, as kinds, spans and keyed tokens.

One scanner serves chat turns and tool results (docs/design/chat-guard.md, "The scanner"). Every
span the detectors find (credentials: class ``secret:<kind>``; personal data: class
``private-data:<kind>``) is reported with its span in the *original* text and its keyed redaction
token, ``Redactor.token(class, value)``: secrets by their text, personal data by its normalised
value (a card with or without spaces, one token). Overlapping spans become one finding, tokenised
by the first span's class and the merged text. A finding never carries the value itself.

Fail closed: a text the detectors cannot scan is one finding of class ``unscanned`` over the
whole text, so ``redact`` replaces it whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._untrusted import clean_text
from refusalkit.redact import Redactor

__all__ = ["UNSCANNED", "ScanFinding", "redact", "scan"]

UNSCANNED = "unscanned"
_Span = tuple[int, int, str, str]  # start, end, field class, value


@dataclass(frozen=True, slots=True)
class ScanFinding:
    """One detected item: its class (``secret:<kind>``, ``private-data:<kind>``), its span in
    the original text, and its keyed redaction token. Never the value."""

    kind: str
    start: int
    end: int
    token: str

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"a finding's span must satisfy 0 <= start <= end: {self}")

    def to_dict(self) -> dict[str, Any]:
        """Log-safe form: ``{"kind", "span": [start, end], "token"}``."""
        return {"kind": self.kind, "span": [self.start, self.end], "token": self.token}


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


def _checkable(text: object) -> str:
    """A plain ``str`` (a subclass's overrides cannot steer the scan), valid Unicode."""
    if type(text) is str and text.isascii():
        return text
    return clean_text(str.__str__(text) if isinstance(text, str) else text)


def scan(text: str, redactor: Redactor) -> tuple[ScanFinding, ...]:
    """The credentials and personal data in ``text``, in text order, spans not overlapping.

    >>> from refusalkit.redact import Redactor
    >>> [f.to_dict()["kind"] for f in scan("key AKIAQ3EGRT5WZ7XK2LMN", Redactor("k", bytes(32)))]
    ['secret:aws_access_key_id']
    """
    checked = _checkable(text)
    try:
        spans = _merged(_spans(checked), checked)
    except Exception:  # noqa: BLE001 - scanning never fails open
        return (ScanFinding(UNSCANNED, 0, len(checked), redactor.token(UNSCANNED, checked)),)
    return tuple(ScanFinding(k, s, e, redactor.token(k, v)) for s, e, k, v in spans)


def redact(text: str, redactor: Redactor) -> tuple[str, tuple[ScanFinding, ...]]:
    """``text`` with each finding's whole span replaced by its token, the rest unchanged, and the
    findings. A text that cannot be scanned is replaced whole; the result is valid Unicode (a
    lone surrogate becomes U+FFFD)."""
    checked = _checkable(text)
    findings = scan(checked, redactor)
    if not findings:
        return checked, findings
    parts, cursor = [], 0
    for f in findings:
        parts += [checked[cursor : f.start], f.token]
        cursor = f.end
    parts.append(checked[cursor:])
    return "".join(parts), findings
