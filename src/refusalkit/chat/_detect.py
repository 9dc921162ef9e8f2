"""Detectors for credentials, personal data and refusal phrasing, compiled once, run in one pass.

Every detector is one RE2 alternation (linear time, never backtracking on untrusted model output,
docs/design/policy.md), so a 2,000-token articulation costs tens of microseconds per detector. A
maintained library (Yelp's detect-secrets) was measured first: ~80 ms per 8 KB in-process, 80x the
turn budget, so the credential formats below are curated from the providers' published token formats
(the same formats detect-secrets and gitleaks match). Findings carry kinds and character spans,
never the matched text, so they can be logged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2

from refusalkit.chat._cues import cue

__all__ = [
    "Finding",
    "find_private_data",
    "find_secrets",
    "looks_like_refusal",
    "luhn_valid",
    "normalise",
]

_SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    (  # the whole block: to its END line, else through the base64 lines that follow
        "private_key",
        (
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?"
            r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\s*[A-Za-z0-9+/]{16,}={0,2})*(?:\s*[A-Za-z0-9+/]+={0,2})?)"
        ),
    ),
    ("aws_access_key_id", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
    (
        "aws_secret_access_key",
        r"(?i:aws)[\w .-]{0,20}(?i:secret)[\w .-]{0,20}[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b",
    ),
    ("github_token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
    ("github_fine_grained_token", r"\bgithub_pat_[A-Za-z0-9_]{82}"),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe_key", r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{24,}"),
    ("llm_api_key", r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{32,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("google_oauth_token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("azure_storage_key", r"AccountKey=[A-Za-z0-9+/]{86}=="),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    (
        "connection_string_password",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@]+:(?P<conn_pw>[^\s@/]+)@[^\s/]+",
    ),
    (
        "credential_assignment",
        (
            r"(?i:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?(?P<assigned>[^\s\"',;]{8,})"
        ),
    ),
)

# Values that are documentation placeholders, not credentials ("postgres://user:password@host").
_PLACEHOLDERS = re2.compile(
    r"(?i)^(?:password|passw0rd|pass|pwd|secret|changeme|example|your[_-]?\w*|redacted|\*+|x+"
    r"|\.\.\.|<[^>]*>|\$\{[^}]*\}|\{[^}]*\}|\$[A-Z_]+|%\([a-z_]+\)s)$"
)

_PII_PATTERNS: tuple[tuple[str, str], ...] = (
    ("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    ("payment_card", r"\b\d(?:[ -]?\d){12,18}\b"),
    ("us_ssn", r"\b\d{3}-\d{2}-\d{4}\b"),
    ("uk_nino", r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"),
    ("es_dni", r"\b\d{8}-?[A-Z]\b"),
    (
        "phone",
        (
            r"(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)|\d{1,4})(?:[ .-]?\d{2,4}){2,4}\b"
            r"|(?:\(\d{3}\) ?|\b\d{3}[ .-])\d{3}[ .-]\d{4}\b)"
        ),
    ),
)

_REFUSAL = re2.compile(
    r"(?i)^\W*(?:(?:i['\x{2019}]?m|i am) sorry[,.!]?\s*(?:but\s+)?|unfortunately,?\s*"
    r"|as an ai[^.]{0,40},\s*)?(?:i|we)\s*(?:can['\x{2019}]?t|cannot|can not"
    r"|won['\x{2019}]?t|will not|am unable to|['\x{2019}]?m unable to|am not able to"
    r"|must decline|have to decline"
    r"|do not feel comfortable|don['\x{2019}]?t feel comfortable)\b"
)

_RESERVED_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = (".example", ".test", ".invalid", ".localhost")
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def _alternation(patterns: Iterable[tuple[str, str]]) -> str:
    return "|".join(f"(?P<{kind}>{rx})" for kind, rx in patterns)


_SECRETS = cue("secrets", _alternation(_SECRET_PATTERNS))
_PII = cue("private_data", _alternation(_PII_PATTERNS))


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected item: its kind, its character span, and its normalised value (kept in memory
    only, for the "did the user supply it" test; never serialised)."""

    kind: str
    start: int
    end: int
    value: str

    def to_dict(self) -> dict[str, Any]:
        """Log-safe form: kind and span, never the value."""
        return {"kind": self.kind, "span": [self.start, self.end]}


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of ISO/IEC 7812-1 Annex B on a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def normalise(kind: str, text: str) -> str:
    """The comparable form of a personal-data value (digits, upper-case id, lower-case address)."""
    if kind == "email":
        return text.lower()
    if kind in ("payment_card", "us_ssn", "phone"):
        return "".join(ch for ch in text if ch.isdigit())
    return "".join(ch for ch in text if ch.isalnum()).upper()


def find_secrets(text: str) -> list[Finding]:
    """Credentials in ``text``; placeholder passwords in examples are not counted."""
    found: list[Finding] = []
    for m in _SECRETS.finditer(text):
        kind = m.lastgroup
        if kind == "connection_string_password" and _PLACEHOLDERS.search(m.group("conn_pw")):
            continue
        if kind == "credential_assignment" and _PLACEHOLDERS.search(m.group("assigned")):
            continue
        found.append(Finding(kind, m.start(), m.end(), ""))
    return found


def _valid_pii(kind: str, value: str) -> bool:
    if kind == "payment_card":
        return 13 <= len(value) <= 19 and luhn_valid(value)
    if kind == "us_ssn":
        area, group, serial = value[:3], value[3:5], value[5:]
        return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"
    if kind == "uk_nino":
        return value[:2] not in _NINO_BAD_PREFIXES
    if kind == "es_dni":
        return _DNI_LETTERS[int(value[:8]) % 23] == value[8]
    if kind == "email":
        domain = value.rsplit("@", 1)[1]
        reserved = domain in _RESERVED_EMAIL_DOMAINS or domain.endswith(_RESERVED_TLDS)
        return not reserved
    return 7 <= len(value) <= 15  # phone: E.164 allows at most 15 digits


def find_private_data(text: str) -> list[Finding]:
    """E-mail addresses, phone numbers, Luhn-valid card numbers and national ids in ``text``.

    National ids: US SSN (SSA area/group/serial rules), UK National Insurance number (HMRC
    prefix rules), Spanish DNI (mod-23 check letter). Addresses in the RFC 2606 reserved example
    domains are documentation, not personal data.
    """
    found: list[Finding] = []
    for m in _PII.finditer(text):
        kind = m.lastgroup
        value = normalise(kind, m.group(0))
        if _valid_pii(kind, value):
            found.append(Finding(kind, m.start(), m.end(), value))
    return found


def looks_like_refusal(text: str) -> bool:
    """Whether a reply opens as a refusal ("I'm sorry, but I can't ..."): a compliance judge."""
    return _REFUSAL.search(text[:300]) is not None
