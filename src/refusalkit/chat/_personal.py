"""Personal-data detection: RE2 candidates, confirmed by well-kept validators.

RE2 finds candidates in one set pass; each is then confirmed by the library that knows its
format (docs/design/chat.md, "Detectors"):

* phone numbers: libphonenumber (``phonenumbers``), international (``+44 20 ...``, ``0044 ...``)
  and national formats in the deployment's default region (``REFUSALKIT_PHONE_REGION``, default
  ``US``); a national number needs phone-like punctuation or a context word ("call", "tel", ...);
* payment cards: a whole run of digits and separators, printed as cards are (one run, groups of
  4, 4-6-5), with issuer prefix, length and the Luhn check (ISO/IEC 7812-1) on the whole run or
  on the run before a trailing security code; and card security codes beside their label;
* IBANs (ISO 13616 mod-97, ``python-stdnum``), in any case and grouping;
* national identifiers, each by its ``python-stdnum`` validator: US SSN, UK NINO (HMRC prefix
  rules), Spanish DNI and NIE, French NIR, Italian codice fiscale, Brazilian CPF; those whose
  check is weak (Canadian SIN, Dutch BSN, Aadhaar, German tax id, an SSN without dashes) count
  only beside a context word;
* e-mail addresses, except in the RFC 2606 reserved example domains.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import phonenumbers
import re2
from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.exceptions import ValidationError
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.nl import bsn
from stdnum.us import ssn

from refusalkit.chat._cues import matches, search_set
from refusalkit.chat._finding import Finding, widest
from refusalkit.chat._screen import screen

__all__ = ["EVERY_DETECTOR", "PHONE_REGION_ENV", "find_private_data", "normalise", "phone_region"]

PHONE_REGION_ENV = "REFUSALKIT_PHONE_REGION"
_RESERVED_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = (".example", ".test", ".invalid", ".localhost")
_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})
_PHONE_WORDS = (
    "phone", "tel", "call", "mobile", "cell", "fax", "whatsapp", "sms", "text me", "contact",
    "reach", "dial", "móvil", "telefon", "portable", "handy",
)  # fmt: skip
# Documentation values: issuers' published test cards, the ISO 13616 and Bundesbank example IBANs
_DOC_VALUES = frozenset(
    {
        "4242424242424242", "4111111111111111", "4012888888881881", "4000056655665556",
        "5555555555554444", "5105105105105100", "5200828282828210", "2223003122003222",
        "378282246310005", "371449635398431", "6011111111111117", "3566002020360505",
        "GB82WEST12345698765432", "DE89370400440532013000", "FR1420041010050500013M02606",
    }
)  # fmt: skip
_CONTEXT = 48  # characters before a candidate searched for its context words


def phone_region() -> str:
    """The default region for national-format phone numbers (ISO 3166-1 alpha-2)."""
    return os.environ.get(PHONE_REGION_ENV, "US").upper()


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _alnum(text: str) -> str:
    return "".join(c for c in text if c.isalnum()).upper()


def normalise(kind: str, text: str) -> str:
    """The comparable form of a personal-data value (digits, upper-case id, lower-case address)."""
    if kind == "email":
        return text.lower()
    if kind in ("payment_card", "card_security_code", "phone") or kind.endswith("_digits"):
        return _digits(text)
    return _alnum(text)


def _near(text: str, start: int, words: tuple[str, ...]) -> bool:
    window = text[max(0, start - _CONTEXT) : start].lower()
    return any(w in window for w in words)


class _Hit(NamedTuple):
    start: int
    end: int
    value: str


Check = Callable[[str, Any], "_Hit | None"]


def _whole(valid: Callable[[str], bool], norm: Callable[[str], str] = _alnum) -> Check:
    def check(_text: str, m: Any) -> _Hit | None:
        value = norm(m.group(0))
        return _Hit(m.start(), m.end(), value) if valid(value) else None

    return check


def _whole_run_of(valid: Callable[[str], bool]) -> Check:
    """A number that is a whole run of digits (not part of a longer one), by its digits."""

    def check(text: str, m: Any) -> _Hit | None:
        value = _digits(m.group(0))
        if not _whole_run(text, m.start(), m.end()) or not valid(value):
            return None
        return _Hit(m.start(), m.end(), value)

    return check


def _with_context(check: Check, *words: str) -> Check:
    def guarded(text: str, m: Any) -> _Hit | None:
        return check(text, m) if _near(text, m.start(), words) else None

    return guarded


def _prefix_end(run: str, count: int) -> int | None:
    """The end offset in ``run`` of its first ``count`` alphanumerics."""
    seen = 0
    for i, ch in enumerate(run):
        if ch.isalnum():
            seen += 1
            if seen == count:
                return i + 1
    return None


_CARD_ISSUER = re2.compile(r"^(?:[2-6]|1\d{14}$)")  # UATP cards (prefix 1) have 15 digits
_SEPARATORS = " ._/\u00a0\u2009\u202f-"
_GROUPINGS = frozenset({(4, 6, 5), (4, 6, 4), (4, 4, 5), (4, 4, 6)})


def _grouped(groups: list[int]) -> bool:
    """How cards are printed: one run, groups of 4 (the last 1 to 4), or 4-6-5 and 4-6-4."""
    if len(groups) == 1 or tuple(groups) in _GROUPINGS:
        return True
    return all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4


def _card_number(digits: str, groups: list[int]) -> bool:
    return (
        13 <= len(digits) <= 19
        and _grouped(groups)
        and _CARD_ISSUER.search(digits) is not None
        and luhn.is_valid(digits)
        and digits not in _DOC_VALUES
    )


def _whole_run(text: str, start: int, end: int) -> bool:
    """The match is a whole run of digits: no separator and digit continues it either side."""
    after = text[end : end + 2]
    before = text[max(0, start - 2) : start]
    continues = len(after) == 2 and after[0] in _SEPARATORS and after[1].isdigit()
    preceded = len(before) == 2 and before[1] in _SEPARATORS and before[0].isdigit()
    return not (continues or preceded)


def _card(text: str, m: Any) -> _Hit | None:
    """A card number is a whole run of digits and separators (``.``, ``_``, ``/``, spaces,
    no-break and thin spaces, ``-``): Luhn, issuer and length hold for the whole run, or for
    the run before a trailing 3-4 digit security code after a space."""
    run, start = m.group(0), m.start()
    if not _whole_run(text, start, m.end()):
        return None
    pieces = [p for p in re2.split(r"[^0-9]+", run) if p]
    groups = [len(p) for p in pieces]
    digits = "".join(pieces)
    cut = len(run) - groups[-1]
    if len(groups) > 2 and groups[-1] in (3, 4) and run[cut - 1] in " \u00a0\u2009\u202f":
        head = digits[: -groups[-1]]  # a card, then its security code
        if _card_number(head, groups[:-1]):
            return _Hit(start, start + len(run[:cut].rstrip(_SEPARATORS)), head)
    return _Hit(start, m.end(), digits) if _card_number(digits, groups) else None


def _iban_valid(value: str) -> bool:
    """ISO 13616: the country's format and length and the mod-97 check; a national check digit
    python-stdnum does not accept (the Belgian example IBAN) does not hide an IBAN."""
    try:
        iban.validate(value, check_country=False)
    except ValidationError:
        return False
    return True


def _iban(_text: str, m: Any) -> _Hit | None:
    run = m.group(0)
    compact = _alnum(run)
    for n in range(len(compact), 14, -1):
        if _iban_valid(compact[:n]):
            if compact[:n] in _DOC_VALUES:
                return None
            end = _prefix_end(run, n)
            if end is not None:
                return _Hit(m.start(), m.start() + end, compact[:n])
    return None


_NOT_A_PHONE = re2.compile(  # dotted quads (IP addresses), dates, and a date with its hour
    r"^\d{1,3}(?:\.\d{1,3}){3}$|^\d{4}[./-]\d{1,2}[./-]\d{1,2}$|^\d{1,2}[./-]\d{1,2}[./-]\d{2,4}$"
    r"|^(?:1[89]|2\d)\d\d[./-](?:0?[1-9]|1[0-2])[./-](?:0?[1-9]|[12]\d|3[01])[ T]"
    r"|^(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-](?:1[89]|2\d)\d\d[ T]"
)


def _fictional(e164: str) -> bool:
    """NANP 555-0100 to 555-0199: reserved for fiction and documentation."""
    return len(e164) == 12 and e164.startswith("+1") and e164[5:9] == "5550" and e164[9] == "1"


def _phone(text: str, m: Any) -> _Hit | None:
    """A valid number: the whole candidate, else (digits written after a number, such as a
    time, join its run) the longest of its prefixes that ends before a space, unless the run
    reads as one number (``_phone_ends``)."""
    raw = m.group(0)
    if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "-_/#."):
        return None  # part of an identifier (INV-2026-000417), a path or a version
    if _NOT_A_PHONE.search(raw):
        return None
    for end in _phone_ends(raw):
        e164 = _phone_number(text, m.start(), raw[:end])
        if e164 is not None:
            return _Hit(m.start(), m.start() + end, e164[1:])
    return None


def _phone_ends(raw: str) -> list[int]:
    """Where a number in ``raw`` may end: at its end, then before each space (longest first),
    unless ``raw`` is one number's digits: a card's (13 to 19 digits in a card's groups) or an
    identifier's (three or more groups of 4)."""
    groups = [len(p) for p in raw.split(" ") if p.isdigit()]
    if len(groups) == raw.count(" ") + 1 and _one_number(groups):
        return [len(raw)]
    return [len(raw), *(i for i in range(len(raw) - 1, 0, -1) if raw[i] == " ")]


def _one_number(groups: list[int]) -> bool:
    if len(groups) >= 3 and set(groups) == {4}:
        return True
    return 13 <= sum(groups) <= 19 and _grouped(groups)


def _phone_number(text: str, start: int, raw: str) -> str | None:
    """The E.164 form of ``raw`` (at ``start`` in ``text``) when it is a phone number: valid,
    not a date, not fictional, and a national one punctuated or beside a context word."""
    international = raw.startswith(("+", "00"))
    if not international:
        punctuated = sum(c in " ().-" for c in raw) >= 1
        if not (punctuated or _near(text, start, _PHONE_WORDS)):
            return None
    if _NOT_A_PHONE.search(raw):
        return None
    e164 = _e164(_dialled(raw.rstrip(" ")), None if international else phone_region())
    return None if e164 is None or _fictional(e164) else e164


def _dialled(raw: str) -> str:
    """``raw`` with the international call prefix most countries dial, ``00``, written as
    ``+``: the form libphonenumber reads without a region."""
    return "+" + raw[2:].lstrip(" ") if raw.startswith("00") else raw


@functools.lru_cache(maxsize=1024)
def _e164(raw: str, region: str | None) -> str | None:
    """The E.164 form of a valid number (libphonenumber), or ``None``; cached, as the same
    number-like strings recur turn after turn."""
    if region is not None and len(_digits(raw)) not in _possible_lengths(region):
        return None
    try:
        number = phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


@functools.cache
def _possible_lengths(region: str) -> frozenset[int]:
    """National-number lengths the region allows (with a trunk prefix: one more)."""
    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    desc = meta.general_desc if meta is not None else None
    lengths = set((desc.possible_length if desc is not None else None) or range(4, 18))
    return frozenset(lengths | {n + 1 for n in lengths} | {n + 2 for n in lengths})


def _in_url(text: str, start: int) -> bool:
    """Whether ``start`` is inside a URL's authority (``scheme://user:pw@host``: not an e-mail)."""
    before = text[max(0, start - 200) : start]
    scheme = before.rfind("://")
    return scheme >= 0 and not any(c.isspace() for c in before[scheme:])


def _personal_address(value: str) -> bool:
    """Not in an RFC 2606 reserved example domain."""
    domain = value.rsplit("@", 1)[1]
    return not (domain in _RESERVED_EMAIL_DOMAINS or domain.endswith(_RESERVED_TLDS))


def _email(text: str, m: Any) -> _Hit | None:
    if _in_url(text, m.start()):
        return None
    value = m.group(0).lower()
    return _Hit(m.start(), m.end(), value) if _personal_address(value) else None


def _obfuscated_email(_text: str, m: Any) -> _Hit | None:
    """``name [at] host [dot] tld``: the same address, spelled out."""
    spelled = re2.sub(r"(?i)\s*[\[(]\s*at\s*[\])]\s*", "@", m.group(0))
    spelled = re2.sub(r"(?i)\s*[\[(]\s*dot\s*[\])]\s*", ".", spelled).lower()
    return _Hit(m.start(), m.end(), spelled) if _personal_address(spelled) else None


def _dni(text: str, m: Any) -> _Hit | None:
    """A Spanish DNI (a 7-digit one padded), not the first group of a UUID (``1234567a-``)."""
    if text[m.end() : m.end() + 1] == "-":
        return None
    value = _alnum(m.group(0))
    return _Hit(m.start(), m.end(), value) if dni.is_valid(value.zfill(9)) else None


def _nino(value: str) -> bool:
    return value[:2] not in _NINO_BAD_PREFIXES


def _labelled(group: str) -> Check:
    def check(_text: str, m: Any) -> _Hit | None:
        start, end = m.span(m.re.groupindex[group])  # (re2 spans take group numbers only)
        return _Hit(start, end, _digits(m.group(group)))

    return check


class _Detector(NamedTuple):
    kind: str
    rx: Any
    check: Check


def _d(kind: str, pattern: str, check: Check) -> _Detector:
    return _Detector(kind, re2.compile(pattern), check)


_DETECTORS: tuple[_Detector, ...] = (
    _d(
        "email",
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:xn--[A-Za-z0-9-]{2,}|[A-Za-z]{2,})\b",
        _email,
    ),
    _d(
        "email",
        r"(?i)\b[a-z0-9._%+-]+\s*[\[(]\s*at\s*[\])]\s*[a-z0-9-]+"
        r"(?:\s*[\[(]\s*dot\s*[\])]\s*[a-z0-9-]+)+",
        _obfuscated_email,
    ),
    _d("payment_card", r"\b\d(?:[ ._/\x{a0}\x{2009}\x{202f}-]?\d){12,40}\b", _card),
    _d(
        "card_security_code",
        r"(?i)\b(?:cvv2?|cvc2?|csc|cid|security code)\b\W{0,5}(?P<v>\d{3,4})\b",
        _labelled("v"),
    ),
    _d("iban", r"\b[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11,34}\b", _iban),
    _d("us_ssn", r"\b\d{3}-\d{2}-\d{4}\b", _whole(ssn.is_valid, _digits)),
    _d(
        "us_ssn",
        r"\b\d{3}[ ._\x{a0}\x{2009}]?\d{2}[ ._\x{a0}\x{2009}]?\d{4}\b",
        _with_context(_whole_run_of(ssn.is_valid), "ssn", "social security", "ss#", "ss #"),
    ),
    _d(
        "uk_nino",
        r"(?i)\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
        _whole(_nino),
    ),
    _d("es_dni", r"(?i)\b\d{7,8}[ -]?[A-Z]\b", _dni),
    _d("es_nie", r"(?i)\b[XYZ][ -]?\d{7}[ -]?[A-Z]\b", _whole(nie.is_valid)),
    _d(
        "fr_nir",
        r"\b[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[ABab]) ?\d{3} ?\d{3} ?\d{2}\b",
        _whole(nir.is_valid),
    ),
    _d(
        "it_codice_fiscale",
        r"(?i)\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b",
        _whole(codicefiscale.is_valid),
    ),
    _d("br_cpf", r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", _whole(cpf.is_valid, _digits)),
    _d(
        "ca_sin",
        r"\b\d{3}[ -]?\d{3}[ -]?\d{3}\b",
        _with_context(
            _whole(sin.is_valid, _digits), "sin", "social insurance", "nas", "assurance sociale"
        ),
    ),
    _d(
        "nl_bsn",
        r"\b\d{4}\.\d{2}\.\d{3}\b|\b\d{9}\b",
        _with_context(_whole(bsn.is_valid, _digits), "bsn", "burgerservice", "sofinummer"),
    ),
    _d(
        "in_aadhaar",
        r"\b\d{4}[ :-]?\d{4}[ :-]?\d{4}\b",
        _with_context(_whole(aadhaar.is_valid, _digits), "aadhaar", "aadhar", "uidai"),
    ),
    _d(
        "de_tax_id",
        r"\b\d{2} ?\d{3} ?\d{3} ?\d{3}\b",
        _with_context(_whole(idnr.is_valid, _digits), "steuer", "tax id", "idnr", "tin"),
    ),
    _d("phone", r"(?:\+|\b00)\d[\d ().-]{6,20}\d\b", _phone),
    _d("phone", r"(?:\(\d{2,5}\)[ .-]?|\b\d{2,5}[ .-])\d{2,4}(?:[ .-]?\d{2,4}){1,3}\b", _phone),
    _d("phone", r"\b\d{10,11}\b", _with_context(_phone, *_PHONE_WORDS)),
)


_SET = search_set(screen(x.rx.pattern) for x in _DETECTORS)
EVERY_DETECTOR = tuple(range(len(_DETECTORS)))


def _found(text: str, chosen: Sequence[int] | None = None) -> Iterator[Finding]:
    """Each detector's confirmed hits; ``chosen``: the detectors to run (by default those the
    set pass says match, in index order; a detector the set does not report has no match)."""
    for index in sorted(matches(_SET, text)) if chosen is None else chosen:
        detector = _DETECTORS[index]
        for m in detector.rx.finditer(text):
            hit = detector.check(text, m)
            if hit is not None:
                yield Finding(detector.kind, hit.start, hit.end, hit.value)


def find_private_data(text: str, chosen: Sequence[int] | None = None) -> list[Finding]:
    """Personal data in ``text``: one finding per value, the widest detector's span.
    ``chosen``: the detectors to run (``EVERY_DETECTOR`` is the reference); by default those the
    set pass reports."""
    return widest(_found(text, None if chosen is None else sorted(chosen)))
