"""Is an assigned value a secret? Placeholders, code references and chosen-looking literals.

A credential detector that matches ``password = <value>`` must still decide whether ``<value>`` is
a secret (docs/design/chat-guard.md, "Detectors"): a placeholder only when the *whole* value is one
(``${DB_PASSWORD}`` is; ``${DB_PASSWORD:-Xk9$mQ2v}`` hides its default), a reference in code when
unquoted and shaped like a name or call (``config.secret``, ``get_secret()``), and a documentation
example when its provider published it as one (``AKIAIOSFODNN7EXAMPLE``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import re2

__all__ = [
    "DOC_EXAMPLES",
    "aws_body",
    "has_group",
    "has_key_body",
    "is_filler",
    "is_placeholder",
    "long_body",
    "mixed",
    "not_placeholder",
    "vet_flag",
    "vet_prose",
    "vet_spoken",
    "vet_value",
]


def vet_value(m: Any, text: str) -> bool:
    """An assigned value is a secret unless it is a placeholder or, unquoted, a reference in
    code (a dotted name, a call, an index, a bare identifier)."""
    for group in ("wrapped", "quoted", "bare"):
        if has_group(m, group):
            value = m.group(group)
            break
    else:
        return False
    if is_placeholder(value) or _CODE_REF.search(value):
        return False
    if group == "quoted":
        return _closed(m, text, value)
    if group == "wrapped":
        return _wrapped_secret(value)
    if group == "bare" and _literal_context(m.group("sep")):
        return _secretish(value)
    follows = text[m.end() : m.end() + 1]
    return mixed(value) and not _IDENTIFIER.search(value) and follows not in ("(", "[")


def _closed(m: Any, text: str, value: str) -> bool:
    """A backtick value is shell command substitution unless it closes right after the value;
    a quoted ``<...`` that does not close there is a ``<PLACEHOLDER WITH SPACES>``."""
    quote: str = m.group("q")
    end: int = m.span(m.re.groupindex["quoted"])[1]
    closes = text[end : end + 1] == quote
    return closes or (quote != "`" and not value.startswith("<"))


def aws_body(m: Any, _text: str) -> bool:
    """An AWS key id's body is upper-case base32; a case-mangled one keeps its digits (so a
    lower-case word such as ``asiakirjamallikansio`` is not one)."""
    body = m.group("body")
    return body.isupper() or any(c.isdigit() for c in body)


_ARMOUR = re2.compile(r"(?i)-{3,}\s*(?:BEGIN|END)[ A-Za-z0-9_-]{0,60}-{3,}")


def long_body(m: Any, _text: str) -> bool:
    """A bare DER or OpenSSH key body is long: 64 base64 characters or more."""
    body: str = m.group(0)
    return sum(c.isalnum() or c in "+/" for c in body) >= 64


def has_key_body(m: Any, _text: str) -> bool:
    """An armoured key with a body: base64, not empty and not a lower-case word."""
    body = "".join(_ARMOUR.sub("", m.group(0)).split())
    if len(body) < 4:
        return False
    cased = any(c.isupper() for c in body) and any(c.islower() for c in body)
    return cased or any(c.isdigit() or c in "+/" for c in body)


_WORDS = "here|your|put|sample|example|placeholder|changeme|token|secret|key"
_ANY_CASE = f"{_WORDS}|{_WORDS.upper()}|{_WORDS.title()}"
# a placeholder word as its own segment: PUT_YOUR_TOKEN_HERE, my-secret-key, ...TokenHere
_FILLER_WORD = re.compile(
    rf"(?:(?:^|[_.~-])(?:{_ANY_CASE})|(?<=[a-z])(?:{_WORDS.title()}))"
    rf"(?:[_.~-](?:{_ANY_CASE})|{_WORDS.title()})*(?:$|[_.~-])"
)


def is_filler(secret: str) -> bool:
    """A token-shaped value made of filler: one character repeated 8 times, an ascending run of
    6 (``abcdef``, ``123456``, ``klmnop``), few distinct characters, or placeholder words
    (``PUT_YOUR_TOKEN_HERE``). A random token has none of these."""
    head = secret[:256]  # a filler shows early; a key block need not be walked
    if len(head) >= 12 and len(set(head.lower())) <= 4:
        return True
    run = same = 1
    for a, b in itertools.pairwise(head):
        same = same + 1 if a == b else 1
        run = run + 1 if a.isalnum() and ord(b) == ord(a) + 1 else 1
        if same >= 8 or run >= 6:
            return True
    return _FILLER_WORD.search(head) is not None


def _literal_context(separator: str) -> bool:
    """``KEY=value`` (.env, shell) and ``key: value`` (YAML) hold literals, not variables."""
    sep = separator.strip()
    return (sep == ":" and separator.endswith((" ", "\t"))) or separator == "="


def _secretish(value: str) -> bool:
    """A literal that looks chosen, not a word: mixed classes or mixed case, or long."""
    cased = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed(value) or cased or (len(value) >= 12 and not value.isalpha())


def _wrapped_secret(value: str) -> bool:
    """``${NAME:-default}`` hides its default; ``<x>``, ``{x}``, ``[x]`` hide ``x``."""
    inner = value[2:-1] if value.startswith("${") else value[1:-1]
    if ":-" in inner or ":=" in inner:
        inner = inner.split(":-", 1)[-1].split(":=", 1)[-1]
    elif value.startswith("${"):
        return False
    if _NAME.search(inner):  # ``{f.kind}``, ``{user.name}``: a template field, not a value
        return False
    return len(inner) >= 6 and mixed(inner) and not is_placeholder(inner)


_NAME = re2.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*$")


def vet_prose(m: Any, _text: str) -> bool:
    value = m.group("v").rstrip(".,;:!?)")
    if value.startswith(("<", "{", "$", "%")):  # a template: <secret>, {token}, $PASSWORD
        return False
    if _CODE_REF.search(value) or _IDENTIFIER.search(value) or any(c in value for c in "(["):
        return False
    return len(value) >= 6 and mixed(value) and not is_placeholder(value)


def vet_flag(m: Any, _text: str) -> bool:
    """``-pVALUE``: a value that is not a placeholder or a shell variable and not one word."""
    value = m.group("v") if has_group(m, "v") else m.group("w")
    return not is_placeholder(value) and not value.startswith("$") and not value.isalpha()


def vet_spoken(m: Any, _text: str) -> bool:
    """A password named in prose ("Use X as the password"): no template, placeholder or code
    reference, 6 characters or more, and shaped like a chosen secret (two character classes, or
    an upper-case letter after the first): "the password field" is not one."""
    value = m.group("v").rstrip(".,;:!?)")
    if value.startswith(("<", "{", "$", "%")) or is_placeholder(value) or _CODE_REF.search(value):
        return False
    inner_upper = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return len(value) >= 6 and (mixed(value) or inner_upper)


def not_placeholder(m: Any, _text: str) -> bool:
    return not is_placeholder(m.group("v"))


def has_group(m: Any, group: str) -> bool:
    """Whether match ``m`` has a named group ``group`` that took part in the match."""
    try:
        return m.group(group) is not None
    except (IndexError, KeyError, re2.error):
        return False


def mixed(value: str) -> bool:
    """At least two of: letters, digits, other characters (a secret, not a word or a number)."""
    classes = (
        any(c.isalpha() for c in value),
        any(c.isdigit() for c in value),
        any(not c.isalnum() and c != "_" for c in value),
    )
    return sum(classes) >= 2 and not value.replace(".", "").replace("-", "").isdigit()


_IDENTIFIER = re2.compile(r"^[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$|^[a-z_]+$")
_CODE_REF = re2.compile(
    r"(?i)^(?:os\.|process\.env|env\.|getenv|environ|settings\.|config\.|self\.|this\.|req\.|"
    r"request\.|args\.|params\.|vault:|secretsmanager:|arn:|ssm:|file:|https?:|secrets\.|getpass\.)"
    r"|\.(?:get|read)\("
)
_PLACEHOLDER = re2.compile(
    r"(?i)^(?:password|passw0rd|pass|pwd|secret|changeme|change[_-]?me|example|redacted"
    r"|none|null|nil|true|false|undefined|test|dummy|sample|placeholder|todo|tbd|hunter2"
    r"|guest|admin|root|user|postgres|demo|default|secret123|password123"
    r"|your[_-]?[a-z_-]*|my[_-]?(?:password|secret|token|key|pass)|\*+|x+|\.\.\.+|…"
    r"|<[a-z _.-]+>|\[[a-z _.-]+\]|\{[a-z_]+\}|\$\{[a-z_][a-z0-9_.]*\}|\$[a-z_][a-z0-9_]*"
    r"|\{\{\s*[\w. |()\"']+\s*\}\}|%\([a-z_]+\)s|%[a-z_]+%|@[a-z_]+@|:[a-z_]+)$"
)
DOC_EXAMPLES = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
            "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        ),
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "sk_test_BQokikJOvBiI2HlWgH4olfQ2",
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
    }
)


_PLACEHOLDER_BODY = re2.compile(
    r"(?i)^(?:[a-z]{2,7}[_-](?:(?:live|test|proj|ant|api\d\d|pat|v1)[_-])*)?"
    r"(?:x{4,}|\*{3,}|0{8,}|\.\.\.+|…|(?:(?:your|my|the|a|an|bot|user|app|api|access|secret|token"
    r"|key|here|goes|example|placeholder|redacted|test|dummy|fake|sample|xxx+)(?:[_ -]+|$))+)$"
)


# refusalkit's own redaction token (refusalkit/redact.py), whole or shortened with "...": what a
# redacted trail or result holds in place of a secret is not a secret
_REDACTION_TOKEN = re2.compile(
    r"^<redacted:hmac-sha256:[A-Za-z0-9_.-]+:(?:[0-9a-f]{16}|\.\.\.|…)>$"
)


def is_placeholder(value: str) -> bool:
    """Whether the *whole* value is a placeholder: a template reference, a stock word, a token
    prefix followed only by filler (``ghp_xxxx...``, ``xoxb-your-bot-token``, ``sk-...``), or
    one of refusalkit's own redaction tokens."""
    value = value.strip()
    return (
        _PLACEHOLDER.search(value) is not None
        or _PLACEHOLDER_BODY.search(value) is not None
        or _REDACTION_TOKEN.search(value) is not None
    )
