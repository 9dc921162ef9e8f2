"""Credential detection: curated whole-secret patterns, gitleaks' rules, and one decoded rescan.

Three sources, merged so that one secret is reported once, by the widest span
(docs/design/chat.md, "Detectors"):

1. *Curated patterns* (here): the project's own, kept where they beat a line-oriented rule set.
   Their spans cover the whole secret, which is what redaction replaces: an armoured private key
   from BEGIN to END (or, with no END, to the end of its block of key-like lines), quoted with
   ``> ``, indented, escaped inside a JSON string (``\\n``), with ``Proc-Type``/``DEK-Info``
   headers, in any letter case or spacing; PuTTY and JWK private keys; a bare DER or OpenSSH key
   body; credentials assigned in code, config, CLI flags and prose ("the password is ...").
   Token prefixes match in any letter case.
2. *gitleaks' default rules* (``_gitleaks``): 217 provider formats with keyword prefilters,
   entropy floors and allowlists.
3. *Encoded secrets*: a base64 or hex run long enough to hide a key is decoded and, when it
   decodes to text, scanned once more by 1 and 2; a finding there makes the whole run a finding
   (kind ``encoded:<kind>``).

A value is a placeholder (``${DB_PASSWORD}``, ``<your-token>``, ``changeme``) only when the
*whole* value is one: ``${DB_PASSWORD:-Xk9$mQ2v}`` is a secret. Documentation example keys that
their providers publish as examples (``AKIAIOSFODNN7EXAMPLE``, the jwt.io token) are not secrets.
Every pattern is RE2 (linear time on hostile text); RE2 set passes pick the patterns to run.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import re2

from refusalkit.chat._cues import matches, search_set
from refusalkit.chat._finding import Finding, widest
from refusalkit.chat._gitleaks import load_rules
from refusalkit.chat._screen import screen
from refusalkit.chat._values import (
    DOC_EXAMPLES,
    aws_body,
    has_group,
    has_key_body,
    is_filler,
    is_placeholder,
    long_body,
    not_placeholder,
    vet_flag,
    vet_prose,
    vet_spoken,
    vet_value,
)

__all__ = ["EVERY_PATTERN", "FALLBACKS", "find_secrets", "is_placeholder"]

# Between the lines of a key block: line breaks (also as JSON's \n), quote marks, indentation,
# comment leaders and string concatenation.
_SEP = r"(?:\\[nr]|[\s>#*/\"'`,;|+])*"
_CHUNK = r"[A-Za-z0-9+/]{16,}={0,2}"
_TAIL = r"(?:" + _SEP + r"[A-Za-z0-9+/]{1,15}={0,2})?"


def _armour(word: str) -> str:
    return r"-{3,}\s*" + word + r"[ A-Za-z0-9_-]{0,40}PRIVATE\s+KEY(?:\s+BLOCK)?\s*-{3,}"


_HEADER = r"(?:proc-type|dek-info|comment|version|hash|charset)\s*:[ \t]*[A-Za-z0-9,._:-]{1,80}"
_PEM = (
    "(?i)"
    + _armour("BEGIN")
    + f"(?:{_SEP}(?:{_HEADER}|{_CHUNK}))*{_TAIL}"
    + f"(?:{_SEP}"
    + _armour("END")
    + ")?"
)
# DER private keys (PKCS#1 RSA, PKCS#8, SEC1 EC) and OpenSSH's "openssh-key-v1", as base64
_DER_BODY = (
    r"(?:MII[A-Za-z0-9+/]{3}IBAAK|MII[A-Za-z0-9+/]{3}IBADAN|MIG[A-Za-z0-9+/]AgEAMBMG"
    r"|MHcCAQEE|MIGkAgEBBD|MIHcAgEBBE|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]*={0,2}"
    f"(?:{_SEP}{_CHUNK})*{_TAIL}"
)
_KEY_NAMES = (
    r"pass(?:word|wd|phrase|code)?|pwd|pw|secret|secret[_-]?key|api[_-]?key|apikey"
    r"|access[_-]?key|access[_-]?token|auth[_-]?token|token|client[_-]?secret|private[_-]?key"
    r"|credentials?|bearer"
)
_ASSIGN = (
    r"(?i)(?:\b|_)(?:" + _KEY_NAMES + r")[\"'\]]?(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\s]{6,200})|(?P<bare>[^\s\"'`,;<>{}\[\]()]{6,200})"
    r"|(?P<wrapped>[<{\[][^\s<>{}\[\]]{6,200}[>}\]]|\$\{[^\s{}]{3,200}\}))"
)
_PROSE = (
    r"(?i)\b(?:password|passphrase|passcode|pass|pwd|pw|pin|secret|token|api key)\s+"
    r"(?:is|was|will be|set to|reads)\s*[:\"'`]?\s*(?P<v>[^\s\"'`]{6,200})"
)
_PW = r"(?:password|passphrase|passcode|passwd|pwd)"
_VALUE = r"[:\"'`]?\s*(?P<v>[^\s\"'`]{6,200})"
# prose: a password "for" someone or something, then the value; and the possessive form
_PROSE_FOR = (
    r"(?i)\b" + _PW + r"\s+(?:for|of|to)\s+(?:[^\s:=]{1,40}\s+){0,4}?[^\s:=]{1,40}"
    r"\s*(?:is|was|:|=|-)\s*" + _VALUE
)
_PROSE_POSSESSIVE = r"(?i)\b" + _PW + r"(?:'s|\x{2019}s)\s+" + _VALUE
# "Use X as the password", "try X as your new passphrase"
_PROSE_AS = (
    r"(?i)\b(?:use|try|enter|type|set|with)\s+[\"'`]?(?P<v>[^\s\"'`]{6,200})[\"'`]?\s+as\s+"
    r"(?:the|your|my|a|an|its|his|her|their)?\s*(?:[a-z]+\s+){0,2}?"
    r"(?:password|passphrase|passcode|pin|secret)\b"
)
# the MySQL family's -pVALUE (the value joined to the flag); sshpass -p VALUE
_P_FLAG = (
    r"(?i)\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump)\b"
    r"[^\n|;&]{0,200}?\s-p(?P<v>[^\s\"'|;]{4,200})"
    r"|\bsshpass\s+-p\s*[\"']?(?P<w>[^\s\"']{4,200})"
)
_FLAG = (
    r"(?i)--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)(?:=|\s+)[\"']?"
    r"(?P<v>[^\s\"']{4,200})"
)
_XML = r"(?i)<(?:password|passwd|secret|api_?key|token|client_?secret)>(?P<v>[^<\s]{4,200})</"


class _Pattern(NamedTuple):
    kind: str
    rx: Any
    group: str | None  # the named group holding the value, when the match holds more
    vet: Callable[[Any, str], bool] | None  # extra test on the match (and the text)


def _p(
    kind: str, rx: str, group: str | None = None, vet: Callable[[Any, str], bool] | None = None
) -> _Pattern:
    return _Pattern(kind, re2.compile(rx), group, vet)


_CURATED: tuple[_Pattern, ...] = (
    _p("private_key", _PEM, vet=has_key_body),
    _p("private_key", _DER_BODY, vet=long_body),
    _p("private_key", r"PuTTY-User-Key-File-\d+:[^\n]*(?:\r?\n[ \t>]*[^\s][^\n]*)*"),
    _p(
        "private_key",
        r"\{[^{}]*\"kty\"\s*:[^{}]*\"(?:d|k)\"\s*:\s*\"[A-Za-z0-9_-]{16,}\"[^{}]*\}"
        r"|\{[^{}]*\"(?:d|k)\"\s*:\s*\"[A-Za-z0-9_-]{16,}\"[^{}]*\"kty\"[^{}]*\}",
    ),
    _p(
        "aws_access_key_id",
        r"\b(?i:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?P<body>[A-Za-z2-7]{16})\b",
        vet=aws_body,
    ),
    _p(
        "aws_secret_access_key",
        r"(?i:aws)[\w .-]{0,20}(?i:secret)[\w .-]{0,20}[\"']?\s*[:=]\s*[\"']?"
        r"(?P<v>[A-Za-z0-9/+]{40})\b",
        "v",
    ),
    _p("github_token", r"\b(?i:gh[pousr]_)[A-Za-z0-9]{36,251}\b"),
    _p("github_fine_grained_token", r"\b(?i:github_pat_)[A-Za-z0-9_]{82}"),
    _p("gitlab_token", r"\b(?i:gl(?:pat|ptt|dt|rt|cbt|oas|imt|ft)-)[A-Za-z0-9_-]{20,}"),
    _p(
        "slack_webhook",
        r"(?i:https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/_-]{20,}",
    ),
    _p("slack_token", r"\b(?i:xox[abposre]-)\d{6,}-[A-Za-z0-9-]{10,}"),
    _p("slack_token", r"\b(?i:xapp-)\d-[A-Za-z0-9]{8,}-\d{6,}-[A-Za-z0-9]{10,}"),
    _p("stripe_key", r"\b(?i:[sr]k_(?:live|test)_|pk_live_|whsec_)[0-9A-Za-z]{20,}"),
    _p(
        "llm_api_key",
        r"\b(?i:sk-(?:proj-|ant-(?:api\d\d-|admin\d\d-)?|svcacct-|admin-)?)[A-Za-z0-9_-]{32,}",
    ),
    _p("telegram_bot_token", r"\b\d{8,10}:(?i:AA)[A-Za-z0-9_-]{33}"),
    _p("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _p("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    _p("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b"),
    _p("google_api_key", r"\b(?i:AIza)[0-9A-Za-z_-]{35}"),
    _p("google_oauth_token", r"\bya29\.[0-9A-Za-z_-]{20,}"),
    _p("sendgrid_key", r"\b(?i:SG)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _p("npm_token", r"\b(?i:npm_)[A-Za-z0-9]{36}\b"),
    _p("pypi_token", r"\b(?i:pypi-AgE)[A-Za-z0-9_-]{50,}"),
    _p(
        "azure_storage_key", r"(?i:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{40,}={0,2})", "v"
    ),
    _p("azure_sas_signature", r"(?i:[?&;]sig=)(?P<v>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", "v"),
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    _p(
        "connection_string_password",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@]*:(?P<v>[^\s@/]{3,})@[^\s/]+",
        "v",
        not_placeholder,
    ),
    _p(
        "http_authorization",
        r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token)\s+(?P<v>[A-Za-z0-9+/=._~-]{12,})",
        "v",
    ),
    _p("credential_assignment", _ASSIGN, "value", vet_value),
    _p("credential_assignment", _PROSE, "v", vet_prose),
    _p("credential_assignment", _PROSE_FOR, "v", vet_spoken),
    _p("credential_assignment", _PROSE_POSSESSIVE, "v", vet_spoken),
    _p("credential_assignment", _PROSE_AS, "v", vet_spoken),
    _p("credential_assignment", _P_FLAG, "value", vet_flag),
    _p("credential_assignment", _FLAG, "v", not_placeholder),
    _p("credential_assignment", _XML, "v", not_placeholder),
)


def _span(pattern: _Pattern, m: Any) -> tuple[int, int]:
    group = pattern.group
    if group == "value":  # whichever of its value groups matched
        group = next(g for g in ("wrapped", "quoted", "bare", "v", "w") if has_group(m, g))
    start, end = m.span() if group is None else m.span(pattern.rx.groupindex[group])
    return start, end  # (re2 spans take group numbers, not names)


def _curated(text: str, hits: Sequence[int] | None = None) -> Iterator[Finding]:
    """The curated patterns' findings; ``hits``: the set's answer for ``text``, when known."""
    for index in _hits(text) if hits is None else hits:
        if index >= len(_CURATED):
            break  # (the set's other patterns come after the curated ones)
        pattern = _CURATED[index]
        for m in pattern.rx.finditer(text):
            if pattern.vet is not None and not pattern.vet(m, text):
                continue
            start, end = _span(pattern, m)
            secret = text[start:end]
            if secret in DOC_EXAMPLES or is_placeholder(secret):
                continue
            if pattern.kind == "private_key" or not is_filler(secret):  # armour is context enough
                yield Finding(pattern.kind, start, end, "")


_DIGEST_OR_ID = re2.compile(
    r"(?i)^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32,128})$"
)
_CREDENTIAL_LABEL = re2.compile(r"(?i)pass|secret|token|auth|api|credential|private|bearer")


def _generic_noise(rule: str, secret: str, label: str) -> bool:
    """A generic rule's hit that is a UUID or a hex digest under a label that names no
    credential (``idempotency_key``, ``checksum_key``): an identifier, not a secret."""
    return (
        rule.startswith("generic")
        and _DIGEST_OR_ID.search(secret) is not None
        and _CREDENTIAL_LABEL.search(label) is None
    )


def _gitleaks(text: str) -> Iterator[Finding]:
    for leak in load_rules().scan(text):
        secret = text[leak.start : leak.end]
        if secret in DOC_EXAMPLES or is_placeholder(secret) or is_filler(secret):
            continue
        if _generic_noise(leak.rule, secret, text[leak.match_start : leak.start]):
            continue
        yield Finding(leak.rule, leak.start, leak.end, "")


_ENCODED = re2.compile(
    r"[A-Za-z0-9+/_-]{28,}={0,2}(?:(?:\\n|\s)*\n[ \t>]*[A-Za-z0-9+/_-]{8,}={0,2})*"
    r"|\b(?:[0-9a-fA-F]{2}){14,}\b"
)


def _decoded(run: str) -> str | None:
    """The text a base64 or hex run decodes to, or ``None`` (binary, or not an encoding)."""
    compact = "".join(run.replace("\\n", "").split()).lstrip(">")
    data: bytes | None = None
    try:
        if len(compact) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in compact):
            data = bytes.fromhex(compact)
        else:
            padded = compact + "=" * (-len(compact) % 4)
            alt = b"-_" if ("-" in compact or "_" in compact) else None
            data = base64.b64decode(padded, altchars=alt, validate=False)
    except (binascii.Error, ValueError):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in text)
    return text if text and printable >= 0.95 * len(text) else None


def _encoded(text: str) -> Iterator[Finding]:
    for m in _ENCODED.finditer(text):
        inner = _decoded(m.group(0))
        if inner is None:
            continue
        found = widest([*_curated(inner), *_gitleaks(inner)], FALLBACKS)
        if found:
            yield Finding(f"encoded:{found[0].kind}", m.start(), m.end(), "")


# A token broken by whitespace ("ghp_abc def") or split across string literals ("ab" + "cd"):
# the pieces are joined and scanned once more by the curated patterns.
_PREFIXES = (
    r"(?i:gh[pousr]_|github_pat_|sk-|[sr]k_live_|pk_live_|whsec_|xox[abposre]-|xapp-|glpat-"
    r"|AKIA|ASIA|AIza|npm_|SG\.|hv[sbr]\.|pypi-|shp(?:at|ca|pa|ss)_|do[por]_v1_|eyJ"
    r"|https://hooks\.slack\.com/|\d{8,10}:AA)"
)
_BROKEN = re2.compile(
    r"\b" + _PREFIXES + r"[A-Za-z0-9_./+-]{2,}(?:(?:[ \t]+|[ \t]*\\?\r?\n[ \t>]*)"
    r"[A-Za-z0-9_./+-]{3,}){1,3}"
)
_LITERALS = re2.compile(
    r"([\"'`])([A-Za-z0-9_./+:=-]{4,})[\"'`](?:\s*\+?\s*\\?\s*[\"'`]([A-Za-z0-9_./+:=-]{2,})"
    r"[\"'`]){1,3}"
)
_LITERAL = re2.compile(r"[\"'`]([A-Za-z0-9_./+:=-]+)[\"'`]")

# Two RE2 set passes per text say which curated patterns match anywhere in it, and whether the
# encoded-run and split-token patterns do: a pattern the sets do not report has no match, so
# skipping it changes nothing (``tests/chat/test_speed_twins.py`` pins this to running them all).
# The sets hold each pattern's screen (``_screen``): wider, so a report may be spurious, never
# missing.
_SET = search_set(screen(x.rx.pattern) for x in _CURATED)
_EXTRAS = search_set(screen(x.pattern) for x in (_ENCODED, _BROKEN, _LITERALS))
_ENCODED_HIT, _BROKEN_HIT, _LITERALS_HIT = range(len(_CURATED), len(_CURATED) + 3)
EVERY_PATTERN = tuple(range(len(_CURATED) + 3))  # what the sets choose from


def _hits(text: str) -> list[int]:
    """The indices of the set's patterns that match in ``text``, in index order."""
    extras = [len(_CURATED) + i for i in matches(_EXTRAS, text)]
    return sorted([*matches(_SET, text), *extras])


def _rejoined(kept: list[int], text: str, first_piece_end: int) -> Iterator[Finding]:
    """Scan the characters at offsets ``kept`` of ``text`` as one string; a finding that runs
    past the first piece (so only the joining reveals it) maps back to the original span."""
    whole = "".join(text[i] for i in kept)
    for f in widest([*_curated(whole), *_gitleaks(whole)], FALLBACKS):
        if kept[f.end - 1] >= first_piece_end:
            yield Finding(f.kind, kept[f.start], kept[f.end - 1] + 1, "")


def _broken(text: str) -> Iterator[Finding]:
    for m in _BROKEN.finditer(text):
        kept = [
            i for i in range(m.start(), m.end()) if not text[i].isspace() and text[i] not in "\\>"
        ]
        first = next((i for i in range(m.start(), m.end()) if text[i].isspace()), m.end())
        yield from _rejoined(kept, text, first)


def _literals(text: str) -> Iterator[Finding]:
    for m in _LITERALS.finditer(text):
        pieces = [p.span(1) for p in _LITERAL.finditer(text, m.start(), m.end())]
        kept = [i for start, end in pieces for i in range(start, end)]
        if kept:
            yield from _rejoined(kept, text, pieces[0][1])


FALLBACKS = frozenset({"credential_assignment", "generic-api-key"})


def find_secrets(text: str, chosen: Sequence[int] | None = None) -> list[Finding]:
    """Credentials in ``text``, one finding per secret, spans covering the whole secret.
    ``chosen``: the patterns to run (``EVERY_PATTERN`` is the reference); by default those the
    set passes report."""
    hits = _hits(text) if chosen is None else sorted(chosen)
    found = [*_curated(text, hits), *_gitleaks(text)]
    for index, detector in (
        (_ENCODED_HIT, _encoded),
        (_BROKEN_HIT, _broken),
        (_LITERALS_HIT, _literals),
    ):
        if index in hits:
            found += detector(text)
    return widest(found, FALLBACKS)
