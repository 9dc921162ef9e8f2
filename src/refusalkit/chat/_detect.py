"""The detectors the safety boundaries use: credentials, personal data, refusal phrasing.

Credentials: ``_secrets`` (curated whole-secret patterns, gitleaks' rules, a decoded rescan).
Personal data: ``_personal`` (RE2 candidates confirmed by libphonenumber and python-stdnum).
Both are RE2 only (linear time on untrusted model output) and report kinds and character spans,
never the matched text, so findings can be logged (docs/design/chat-guard.md, "Detectors").
"""

from __future__ import annotations

import re2

from refusalkit.chat import _personal, _secrets
from refusalkit.chat._finding import Finding
from refusalkit.chat._personal import normalise
from refusalkit.chat._secrets import is_placeholder
from refusalkit.chat._untrusted import clean_text

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


def find_secrets(text: str) -> list[Finding]:
    """Credentials in ``text``: one finding per secret, its span covering the whole secret."""
    return _secrets.find_secrets(_checkable(text))


def find_private_data(text: str) -> list[Finding]:
    """Personal data in ``text``: one finding per value, confirmed by its validator."""
    return _personal.find_private_data(_checkable(text))


def looks_like_refusal(text: str) -> bool:
    """Whether a reply opens as a refusal ("I'm sorry, but I can't ..."): a compliance judge."""
    return _REFUSAL.search(_checkable(text[:300])) is not None
