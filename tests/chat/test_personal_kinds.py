"""Personal data, claimed kind by kind, on third-party rows (docs/chat.md, "Personal data").

Sources: Microsoft Presidio's recognizer test rows (``tests/vectors/presidio``, MIT), the valid
examples in python-stdnum's own module docstrings (the installed package), and
libphonenumber's example numbers (the ``phonenumbers`` package). For every kind docs/chat.md
claims, recall is at least 0.95 on the rows that are not exempt; each exemption is one of the
classes docs/chat.md lists, and is counted.
"""

from __future__ import annotations

import importlib
import json
import re
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import phonenumbers
import pytest

from refusalkit.chat._detect import find_private_data
from refusalkit.chat._personal import _DOC_VALUES, _fictional

ROOT = Path(__file__).resolve().parents[2]
PRESIDIO = ROOT / "tests" / "vectors" / "presidio" / "recognizer-rows.jsonl"
CONTEXT = {"us_ssn": "SSN", "ca_sin": "SIN", "in_aadhaar": "Aadhaar", "de_tax_id": "Steuer-ID"}
VALIDATORS = {
    "us_ssn": "stdnum.us.ssn", "uk_nino": None, "es_dni": "stdnum.es.dni",
    "es_nie": "stdnum.es.nie", "it_codice_fiscale": "stdnum.it.codicefiscale",
    "ca_sin": "stdnum.ca.sin", "in_aadhaar": "stdnum.in_.aadhaar", "de_tax_id": "stdnum.de.idnr",
    "fr_nir": "stdnum.fr.nir", "br_cpf": "stdnum.br.cpf", "nl_bsn": "stdnum.nl.bsn",
}  # fmt: skip
STDNUM_KINDS = (
    "fr_nir", "br_cpf", "nl_bsn", "es_dni", "es_nie", "it_codice_fiscale", "us_ssn", "ca_sin",
    "in_aadhaar", "de_tax_id",
)  # fmt: skip
STDNUM_CONTEXT = {"nl_bsn": "BSN", **CONTEXT}


def _compact(value: str) -> str:
    return "".join(c for c in value if c.isalnum()).upper()


def exemption(kind: str, value: str) -> str | None:
    """Why a positive row is not counted, or ``None`` when it is (docs/chat.md lists these)."""
    compact = _compact(value)
    if compact in _DOC_VALUES:
        return "published test value"
    if kind == "phone":
        e164 = "+" + "".join(c for c in value if c.isdigit())
        if _fictional(e164) or _fictional("+1" + e164[1:]):
            return "fictional number (NANP 555-0100 to 555-0199)"
        if not value.startswith(("+", "00")):
            try:
                valid = phonenumbers.is_valid_number(phonenumbers.parse(value, "US"))
            except phonenumbers.NumberParseException:
                valid = False
            if not valid:
                return "national format of another region"
        return None
    module = VALIDATORS.get(kind)
    if module is not None:
        validator = importlib.import_module(module)
        candidate = compact.zfill(9) if kind == "es_dni" else compact
        if not validator.is_valid(candidate):
            return "python-stdnum rejects the value"
    if kind == "us_ssn" and not re.fullmatch(r"\d{3}([ .-]?)\d{2}\1\d{4}", value):
        return "not grouped as an SSN (3-2-4)"
    return None


@cache
def presidio_rows() -> list[dict[str, object]]:
    return [json.loads(x) for x in PRESIDIO.read_text("utf-8").splitlines() if x.strip()]


def _found(kind: str, text: str, start: int, end: int) -> bool:
    return any(
        f.kind == kind and f.start <= start + 1 and end - 1 <= f.end
        for f in find_private_data(text)
    )


def _in_context(kind: str, text: str, start: int, end: int) -> tuple[str, int, int]:
    """A kind that needs a context word is measured with one before it, if the row has none."""
    word = CONTEXT.get(kind)
    if word is None or word.lower() in text.lower()[:start]:
        return text, start, end
    prefix = f"{word}: "
    return prefix + text, start + len(prefix), end + len(prefix)


def presidio_recall() -> tuple[dict[str, list[int]], Counter[str]]:
    """Per kind: [found, counted]; and the exemptions by class."""
    scores: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    exempt: Counter[str] = Counter()
    for row in presidio_rows():
        kind, text = str(row["kind"]), str(row["text"])
        if not row["expected"]:
            continue
        for start, end in row["spans"] or [[0, len(text)]]:  # type: ignore[attr-defined]
            why = exemption(kind, text[start:end])
            if why is not None:
                exempt[f"{kind}: {why}"] += 1
                continue
            scores[kind][0] += _found(kind, *_in_context(kind, text, start, end))
            scores[kind][1] += 1
    return dict(scores), exempt


def test_presidio_recall_per_claimed_kind() -> None:
    scores, exempt = presidio_recall()
    low = {k: f"{a}/{n}" for k, (a, n) in scores.items() if a < 0.95 * n}
    assert low == {}, (low, exempt)
    assert {"payment_card", "email", "iban", "phone", "us_ssn", "uk_nino"} <= set(scores)


def test_presidio_negatives_are_rarely_flagged() -> None:
    flagged = [
        str(r["text"])
        for r in presidio_rows()
        if not r["expected"] and any(f.kind == r["kind"] for f in find_private_data(str(r["text"])))
    ]
    negatives = sum(1 for r in presidio_rows() if not r["expected"])
    # one known: a Latvian IBAN with a lower-case bank code, valid mod 97 (IBANs match any case)
    assert flagged == ["LV80 bANK 0000 4351 9500 1"], flagged
    assert negatives > 200


def stdnum_examples(module: str) -> list[str]:
    """The values python-stdnum's docstring shows ``validate`` accepting."""
    doc = importlib.import_module(module).__doc__ or ""
    found = re.findall(r">>> validate\('([^']+)'\)([^\n]*)\n'", doc)
    return [value for value, comment in found if "company" not in comment]  # people only


@pytest.mark.parametrize("kind", STDNUM_KINDS)
def test_stdnum_docstring_examples(kind: str) -> None:
    examples = stdnum_examples(str(VALIDATORS[kind]))
    assert examples, kind
    word = STDNUM_CONTEXT.get(kind, "id")
    missed = [
        v
        for v in examples
        if not _found(kind, f"{word}: {v} ok", len(word) + 2, len(word) + 2 + len(v))
    ]
    assert missed == []


def test_libphonenumber_example_numbers() -> None:
    """Every region's example mobile and fixed-line number, international and E.164."""
    total, missed = 0, []
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is None:
                continue
            for fmt in (
                phonenumbers.PhoneNumberFormat.INTERNATIONAL,
                phonenumbers.PhoneNumberFormat.E164,
            ):
                shown = phonenumbers.format_number(number, fmt)
                if exemption("phone", shown) is not None:
                    continue
                total += 1
                text = f"Call me on {shown} tomorrow."
                if not _found("phone", text, 11, 11 + len(shown)):
                    missed.append(shown)
    assert total > 900
    assert len(missed) <= 0.05 * total, missed
