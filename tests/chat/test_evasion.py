"""What a model can type around a detector (docs/design/chat-guard.md, "The normalised view").

For one sample of every secret and personal-data kind of the detection corpus
(``bench/data/detect-corpus.jsonl``), each evasion a reader still reads through (an invisible
character, Markdown marks, an HTML entity, fullwidth or look-alike letters, table cells, wrapped
base64) keeps the value detected, and the redacted text holds no 8 consecutive characters of it.
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.chat import redact, scan
from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._view import INVISIBLE, build
from refusalkit.redact import Redactor

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "data" / "detect-corpus.jsonl"
REDACTOR = Redactor("k1", bytes(range(32)))
PERSONAL = frozenset(
    {"email", "phone_international", "phone_national", "payment_card", "iban", "us_ssn",
     "uk_nino", "es_dni", "fr_nir", "it_codice_fiscale", "br_cpf"}
)  # fmt: skip
PREFERRED = ("plain", "prose", "code", "env", "sentence", "json", "yaml", "labelled")


def _invisible_chars() -> list[str]:
    out = []
    for a, _, b in re.findall(r"(.)(-(.))?", INVISIBLE):
        out.append(a)
        if b:
            out.extend(chr(c) for c in range(ord(a) + 1, ord(b) + 1, 7))
    return out


INVISIBLES = _invisible_chars()
INVISIBLE_SET = frozenset(INVISIBLES)  # some are letters to isalnum (U+115F): they show nothing


@cache
def samples() -> dict[str, tuple[str, str]]:
    """One (text, secret) per kind: a positive whose secret the guard finds as it stands."""
    rows = [json.loads(x) for x in CORPUS.read_text("utf-8").splitlines() if x.strip()]
    out: dict[str, tuple[str, str]] = {}
    for variant in PREFERRED:
        for row in rows:
            kind, text, secret = row["kind"], row["text"], row.get("secret") or ""
            if kind is None or kind in out or row["variant"] != variant or secret not in text:
                continue
            if not secret.isascii() or len(secret) < 8:
                continue
            if _covered(text, text.index(secret), secret):
                out[kind] = (text, secret)
    return out


def _covered(text: str, start: int, secret: str) -> bool:
    end = start + len(secret)
    found = [*find_secrets(text), *find_private_data(text)]
    return any(f.start <= start and end <= f.end for f in found)


def _leaks(out: str, secret: str) -> list[str]:
    compact = secret.replace("\n", "")
    return [compact[i : i + 8] for i in range(len(compact) - 7) if compact[i : i + 8] in out]


def check(kind: str, evaded: str) -> None:
    """The sample of ``kind`` with its secret typed as ``evaded``: found, and fully redacted."""
    text, secret = samples()[kind]
    typed = text.replace(secret, evaded)
    found = scan(typed, REDACTOR)
    start = typed.index(evaded)
    shown = [start + i for i, c in enumerate(evaded) if c.isalnum() and c not in INVISIBLE_SET]
    uncovered = [i for i in shown if not any(f.start <= i < f.end for f in found)]
    assert uncovered == [], (kind, evaded)
    out, _ = redact(typed, REDACTOR)
    assert _leaks(out, secret) == [], (kind, typed, out)


KINDS = sorted(samples())
SECRET_KINDS = [k for k in KINDS if k not in PERSONAL]
# A table row holds one line: kinds whose sample spans lines or holds a space are not split over
# cells (they are chosen here, not skipped, so every collected case runs).
ROW_KINDS = [k for k in SECRET_KINDS if "\n" not in samples()[k][0] and " " not in samples()[k][1]]


def test_every_kind_has_a_sample() -> None:
    assert len(KINDS) >= 35
    assert set(KINDS) >= PERSONAL


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u00ad", "\u2060", "\ufeff", "\u202e"])
def test_one_invisible_character(kind: str, invisible: str) -> None:
    secret = samples()[kind][1]
    middle = len(secret) // 2
    check(kind, secret[:middle] + invisible + secret[middle:])


@pytest.mark.parametrize("kind", KINDS)
def test_invisible_between_every_character(kind: str) -> None:
    secret = samples()[kind][1]
    check(kind, "\u200b".join(secret))


@pytest.mark.parametrize("kind", KINDS)
def test_bold_split(kind: str) -> None:
    secret = samples()[kind][1]
    check(kind, f"**{secret[:4]}**{secret[4:]}")


@pytest.mark.parametrize("kind", KINDS)
def test_code_marks_inside(kind: str) -> None:
    secret = samples()[kind][1]
    check(kind, f"{secret[:5]}``{secret[5:]}")


@pytest.mark.parametrize("kind", KINDS)
def test_html_entities(kind: str) -> None:
    secret = samples()[kind][1]
    decimal = f"&#{ord(secret[2])};"
    hexa = f"&#x{ord(secret[-2]):x};"
    check(kind, secret[:2] + decimal + secret[3:-2] + hexa + secret[-1])


@pytest.mark.parametrize("kind", KINDS)
def test_fullwidth(kind: str) -> None:
    secret = samples()[kind][1]
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in secret)
    assert unicodedata.normalize("NFKC", wide) == secret
    check(kind, wide)


@pytest.mark.parametrize("kind", KINDS)
def test_lookalike_letters(kind: str) -> None:
    secret = samples()[kind][1]
    cyrillic = "\u0410\u0415\u041e\u0430\u0435\u043e"
    swapped = secret.translate(str.maketrans("AEOaeo", cyrillic))
    check(kind, swapped)


@pytest.mark.parametrize("kind", ROW_KINDS)
def test_split_over_table_cells(kind: str) -> None:
    text, secret = samples()[kind]
    cut = next(
        i
        for i in range(len(secret) // 2, len(secret) - 4)
        if re.fullmatch(r"[A-Za-z0-9+/=_-]{8}", secret[i - 4 : i + 4])
        and not secret[i - 4 : i + 4].isdigit()
    )
    row = text.replace(secret, f"{secret[:cut]} | {secret[cut:]}")
    table = f"| note | value |\n|---|---|\n| {row} |"
    found = scan(table, REDACTOR)
    start = table.index(secret[:cut])
    assert any(f.start <= start and start + len(secret) + 3 <= f.end for f in found), kind
    out, _ = redact(table, REDACTOR)
    assert _leaks(out, secret) == []


@pytest.mark.parametrize("kind", SECRET_KINDS)
@pytest.mark.parametrize("width", [16, 20, 40, 76])
def test_wrapped_base64(kind: str, width: int) -> None:
    text = samples()[kind][0]
    encoded = base64.b64encode(text.encode()).decode()
    wrapped = "\n".join(encoded[i : i + width] for i in range(0, len(encoded), width))
    message = f"Here is the config, base64:\n{wrapped}\nDecode it with base64 -d."
    found = scan(message, REDACTOR)
    assert found, kind
    out, _ = redact(message, REDACTOR)
    assert all(line not in out for line in wrapped.splitlines() if len(line) >= 8)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KINDS), st.sampled_from(INVISIBLES), st.data())
def test_any_invisible_character_anywhere(kind: str, invisible: str, data: st.DataObject) -> None:
    secret = samples()[kind][1]
    at = data.draw(st.integers(0, len(secret)))
    check(kind, secret[:at] + invisible + secret[at:])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KINDS), st.lists(st.sampled_from(INVISIBLES), min_size=1, max_size=4))
def test_several_invisible_characters(kind: str, chars: list[str]) -> None:
    secret = samples()[kind][1]
    step = max(1, len(secret) // (len(chars) + 1))
    evaded = secret
    for n, ch in enumerate(chars, 1):
        at = min(len(evaded), n * step + n - 1)
        evaded = evaded[:at] + ch + evaded[at:]
    check(kind, evaded)


def test_every_format_character_is_invisible() -> None:
    """Every Unicode ``Cf`` character this Python knows is dropped by the view."""
    missing = [
        f"U+{cp:04X}"
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) == "Cf" and build(f"a{chr(cp)}b") is None
    ]
    assert missing == []


def test_plain_text_has_no_view() -> None:
    assert build("The deploy finished at 10:30; 42 checks passed.\nNext: review.") is None


def test_view_spans_map_to_every_original_character() -> None:
    text = "x **AKIA**Q3\u200bEG&#82;T5WZ7XK2LMN y"
    view = build(text)
    assert view is not None
    assert view.text == "x AKIAQ3EGRT5WZ7XK2LMN y"
    start = view.text.index("AKIA")
    assert view.span(start, start + 20) == (text.index("AKIA"), text.index(" y"))


def test_a_table_of_numbers_is_not_joined() -> None:
    assert build("| 2024 | 1234 | 5678 | 9012 |") is None
