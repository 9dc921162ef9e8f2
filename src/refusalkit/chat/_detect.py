"""The detectors the safety boundaries use: credentials, personal data, refusal phrasing.

Credentials: ``_secrets`` (curated whole-secret patterns, gitleaks' rules, a decoded rescan).
Personal data: ``_personal`` (RE2 candidates confirmed by libphonenumber and python-stdnum).
Both are RE2 only (linear time on untrusted model output) and report kinds and character spans,
never the matched text, so findings can be logged (docs/design/chat-guard.md, "Detectors").
Each runs on the text and on its normalised view (``_view``: invisible characters dropped, NFKC,
HTML entities, Markdown marks, joined cells and wrapped lines); a finding in the view maps back to
the whole original span. A finding's value is the secret as the view reads it (personal data:
normalised), so one secret typed two ways gets one token. A text's view is built once and shared
by both detectors (a small cache keyed by plain strings).
"""

from __future__ import annotations

import functools

import re2

from refusalkit.chat import _personal, _secrets
from refusalkit.chat._finding import Finding, widest
from refusalkit.chat._personal import normalise
from refusalkit.chat._secrets import is_placeholder
from refusalkit.chat._untrusted import clean_text
from refusalkit.chat._view import View, build

__all__ = [
    "Finding",
    "find_private_data",
    "find_secrets",
    "is_placeholder",
    "looks_like_refusal",
    "normalise",
]

_REFUSAL = re2.compile(
    r"(?i)^\W*(?:(?:i['\x{2019}]?m|i am) sorry[,.!]?\s*(?:but\s+)?|unfortunately,?\s*"
    r"|as an ai[^.]{0,40},\s*)?(?:i|we)\s*(?:can['\x{2019}]?t|cannot|can not"
    r"|won['\x{2019}]?t|will not|am unable to|['\x{2019}]?m unable to|am not able to"
    r"|must decline|have to decline"
    r"|do not feel comfortable|don['\x{2019}]?t feel comfortable)\b"
)


def _checkable(text: str) -> str:
    """RE2 reads UTF-8: a lone surrogate becomes U+FFFD (one character, so spans stay put)."""
    return text if text.isascii() else clean_text(text)


def _prepared(text: str) -> tuple[str, View | None]:
    """The checkable text and its view, built once for the detectors that read the same turn
    (``scan`` and the safety boundaries ask for secrets, then for personal data). A ``str``
    subclass is read as a plain ``str``: its ``__eq__`` and ``__hash__`` cannot steer the cache."""
    return _prepared_plain(text if type(text) is str else str.__str__(text))


@functools.lru_cache(maxsize=16)
def _prepared_plain(text: str) -> tuple[str, View | None]:
    checked = _checkable(text)
    return checked, build(checked)


def _valued(found: list[Finding], text: str) -> list[Finding]:
    """Secret findings carry their text as their value (for the token)."""
    return [Finding(f.kind, f.start, f.end, text[f.start : f.end]) for f in found]


def _mapped(found: list[Finding], view: View) -> list[Finding]:
    return [Finding(f.kind, *view.span(f.start, f.end), f.value) for f in found]


def find_secrets(text: str) -> list[Finding]:
    """Credentials in ``text`` and its normalised view: one finding per secret, its span
    covering every original character of the whole secret."""
    text, view = _prepared(text)
    found = _valued(_secrets.find_secrets(text), text)
    if view is None:
        return found
    seen = _mapped(_valued(_secrets.find_secrets(view.text), view.text), view)
    return widest([*seen, *found], _secrets.FALLBACKS)


def find_private_data(text: str) -> list[Finding]:
    """Personal data in ``text`` and its normalised view: one finding per value, confirmed by
    its validator."""
    text, view = _prepared(text)
    found = _personal.find_private_data(text)
    if view is None:
        return found
    return widest([*_mapped(_personal.find_private_data(view.text), view), *found])


def looks_like_refusal(text: str) -> bool:
    """Whether a reply opens as a refusal ("I'm sorry, but I can't ..."): a compliance judge."""
    return _REFUSAL.search(_checkable(text[:300])) is not None
