"""Credential, personal-data and refusal-phrase detectors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.chat._cues import _REGISTRY, present
from refusalkit.chat._detect import find_private_data, find_secrets, looks_like_refusal, luhn_valid

SECRETS = {
    "aws_access_key_id": "use AKIAIOSFODNN7EXAMPLE for the bucket",
    "aws_secret_access_key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...",
    "github_token": "token ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "slack_token": "xoxb-123456789012-abcdefghijkl",
    "stripe_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dcAB12",
    "google_api_key": "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "connection_string_password": "postgres://admin:Tr0ub4dor-and-3@db.internal:5432/app",
    "credential_assignment": 'password = "correct-horse-battery"',
}


@pytest.mark.parametrize(("kind", "text"), sorted(SECRETS.items()))
def test_each_credential_format_is_found(kind: str, text: str) -> None:
    kinds = [f.kind for f in find_secrets(text)]
    assert kind in kinds


@pytest.mark.parametrize(
    "text",
    [
        "Use the form postgresql://user:password@host:5432/dbname.",
        "Set password = <your-password> in the config.",
        "export API_KEY=${API_KEY}",
        "The word password appears, and AKIA alone is not a key.",
        "A Merkle tree commits to all leaves with one root hash.",
    ],
)
def test_placeholders_and_prose_are_not_credentials(text: str) -> None:
    assert find_secrets(text) == []


def test_findings_carry_spans_not_values() -> None:
    text = "key: AKIAIOSFODNN7EXAMPLE."
    [finding] = find_secrets(text)
    assert text[finding.start : finding.end] == "AKIAIOSFODNN7EXAMPLE"
    assert "AKIA" not in str(finding.to_dict())


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("email", "write to bob.martin@contoso-corp.com today"),
        ("phone", "call (415) 555-2671"),
        ("phone", "call +44 20 7946 0958"),
        ("payment_card", "card 4539 1488 0343 6467"),
        ("us_ssn", "SSN 219-09-9999"),
        ("uk_nino", "NI JG 10 37 59 A"),
        ("es_dni", "DNI 12345678Z"),
    ],
)
def test_private_data_kinds(kind: str, text: str) -> None:
    assert [f.kind for f in find_private_data(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112",  # fails Luhn
        "SSN 666-12-3456",  # area 666 is never issued
        "NI QQ 12 34 56 C",  # Q is not a valid first letter
        "DNI 12345678A",  # wrong check letter
        "mail jane.doe@example.com",  # RFC 2606 documentation domain
        "It is 2025-11-30, version 1.2.3, pi is 3.14159.",
    ],
)
def test_invalid_or_reserved_values_are_not_personal_data(text: str) -> None:
    assert find_private_data(text) == []


def _luhn_digit(body: str) -> str:
    for d in "0123456789":
        if luhn_valid(body + d):
            return d
    raise AssertionError("a Luhn check digit always exists")


@settings(max_examples=100)
@given(body=st.text(alphabet="0123456789", min_size=12, max_size=18))
def test_luhn_exactly_one_check_digit(body: str) -> None:
    good = _luhn_digit(body)
    assert sum(luhn_valid(body + d) for d in "0123456789") == 1
    assert luhn_valid(body + good)


@settings(max_examples=100)
@given(body=st.text(alphabet="0123456789", min_size=15, max_size=15))
def test_every_luhn_valid_16_digit_card_is_found(body: str) -> None:
    number = body + _luhn_digit(body)
    spaced = " ".join(number[i : i + 4] for i in range(0, 16, 4))
    found = find_private_data(f"the card is {spaced}.")
    assert [(f.kind, f.value) for f in found] == [("payment_card", number)]


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("I can't help with that.", True),
        ("I\u2019m sorry, but I can\u2019t do that.", True),
        ("Unfortunately, I won't be able to.", True),
        ("I must decline.", True),
        ("I can help with that!", False),
        ("Sure. I cannot stress enough how easy this is.", False),
    ],
)
def test_refusal_phrases(text: str, refusal: bool) -> None:
    assert looks_like_refusal(text) is refusal


WORDS = [
    "take",
    "400",
    "mg",
    "every",
    "6",
    "hours",
    "you",
    "will",
    "win",
    "the",
    "court",
    "may",
    "definitely",
    "are",
    "a",
    "human",
    "I'm",
    "AI",
    "AKIAIOSFODNN7EXAMPLE",
    "bob@contoso.io",
    "(415)",
    "555-2671",
    "password=hunter2hunter2",
    "lawsuit",
    "?",
    "it",
    "rain",
    "guilty",
]


@settings(max_examples=150)
@given(words=st.lists(st.sampled_from(WORDS), max_size=40))
def test_one_pass_cue_scan_agrees_with_each_pattern(words: list[str]) -> None:
    text = " ".join(words)
    found = present(text)
    for name, rx in _REGISTRY.items():
        assert (name in found) == (rx.search(text) is not None), name


def test_a_private_key_finding_spans_the_whole_block() -> None:
    """The span is what gets redacted, so it must cover the key body, not just the header."""
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0="
    block = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    text = f"Here: {block} done."
    [found] = find_secrets(text)
    assert text[found.start : found.end] == block
    cut = f"Here: -----BEGIN RSA PRIVATE KEY-----\n{body}"  # truncated: no END line
    [found] = find_secrets(cut)
    assert cut[found.start : found.end].endswith(body)
