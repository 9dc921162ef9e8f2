"""Credential, personal-data and refusal-phrase detectors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stdnum import luhn

from refusalkit.chat._cues import _REGISTRY, present
from refusalkit.chat._detect import find_private_data, find_secrets, looks_like_refusal
from refusalkit.chat._scrub import redact_text
from refusalkit.keyring import Keyring

SECRETS = {
    "aws_access_key_id": "use AKIAQ3EGRT5WZ7XK2LMN for the bucket",
    "aws_secret_access_key": "aws_secret_access_key = kX8vN2pL9qR4sT7uW1yZ3aB5cD6eF0gH2iJ4kL6m",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...",
    "github_token": "token ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "slack_token": "xoxb-482910375561-Qm7xVt2kLp9w",
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
    text = "key: AKIAQ3EGRT5WZ7XK2LMN."
    [finding] = find_secrets(text)
    assert text[finding.start : finding.end] == "AKIAQ3EGRT5WZ7XK2LMN"
    assert "AKIA" not in str(finding.to_dict())


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("email", "write to bob.martin@contoso-corp.com today"),
        ("phone", "call (415) 555-2671"),
        ("phone", "call +44 20 7946 0958"),
        ("payment_card", "card 4539 1488 0343 6467"),
        ("us_ssn", "SSN 536-22-8726"),
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


@settings(max_examples=100)
@given(body=st.text(alphabet="0123456789", min_size=14, max_size=14))
def test_every_luhn_valid_16_digit_visa_number_is_found(body: str) -> None:
    number = "4" + body + luhn.calc_check_digit("4" + body)
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


# -- the evasions a real-world corpus found -----------------------------------------------------

EVASIONS = {
    "upper-case token": "TOKEN: GHP_1A2B3C4D5E6F7G8H9I0J1K2L3M4N5O6P7Q8R",
    "token with a space inside": "use ghp_1a2B3c4D5e6F7g8H9i0J 1k2L3m4N5o6P7q8R please",
    "stripe publishable live key": "pk_live_51HqLyjWDarjtT1zdp7dcXyZ0a9B8c7D6e5",
    "stripe webhook secret": "whsec_5f8Kq2Lm9Zx3Vb7Nc1Qw4Er6Ty8Ui0Op",
    "slack app token": "xapp-1-A07QK3ZVD9R-4178792188491-6f46fd79c05c08ecf22dff01090312ce",
    "azure sas signature": "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sig=Zx9Lm2Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk%2B%3D",
    "putty private key": "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
    "AAAAIGh8Kq2Lm9Zx3Vb7Nc1Qw4Er6Ty8Ui0OpAsDfGhJkLzXc\nPrivate-MAC: 5f8e9d",
    "jwk private key": '{"kty": "OKP", "crv": "Ed25519", '
    '"x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", '
    '"d": "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}',
    "bare base64 key body": "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0Zx3Vb7Nc1Qw4Er6Ty8Ui0OpAsDfGhJkLzXcVbNm1Qw2Er3Ty4Ui5O",
    "lower-case armour": "-----begin rsa private key-----\nmiieowibaakcaqeau1su1lfvlphcozmxh2mo",
    "spaced armour": "----- BEGIN RSA PRIVATE KEY -----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgO",
    "the password is": "ok, the password is Tr0ub4dor&3x, don't share it",
    "pass =": "pass = Xk9#mQ2vL7",
    "--password": "mysql -u root --password Xk9mQ2vL7z prod",
    "redis://:pw@host": "redis://:Xk9mQ2vL7zPw@cache.internal:6379/0",
    "{Real}": "password={Xk9#mQ2vL7}",
    "${NAME:-default}": "password=${DB_PASSWORD:-Xk9#mQ2vL7}",
    "<value>": "password=<Xk9#mQ2vL7>",
}


@pytest.mark.parametrize("text", EVASIONS.values(), ids=list(EVASIONS))
def test_evasions_are_found(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize(
    "text",
    [
        "password=${DB_PASSWORD}",
        "password=<your-password>",
        "password={password}",
        "API_KEY=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "SLACK_TOKEN=xoxb-your-bot-token",
        "password = os.environ['DB_PASSWORD']",
        '"idempotency_key": "550e8400-e29b-41d4-a716-446655440000"',
        "checksum_key: " + "ab12" * 16,
    ],
)
def test_only_whole_placeholders_and_identifiers_are_ignored(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("iban", "pay to DE44 5001 0517 5407 3249 31 by Friday"),
        ("iban", "iban: gb33bukb20201555555555"),
        ("phone", "call me on (212) 736-0147"),  # national format, no country code
        ("phone", "cell 212.736.0147"),
        ("phone", "TEL;TYPE=cell:+49 30 15318398"),  # right after a label's colon
        ("it_codice_fiscale", "CF RSSMRA85T10A562S"),
        ("br_cpf", "CPF 529.982.247-25"),
        ("es_nie", "NIE X1234567L"),
        ("email", "write to bob [at] contoso [dot] com"),
    ],
)
def test_more_personal_data(kind: str, text: str) -> None:
    assert kind in [f.kind for f in find_private_data(text)]


def test_a_card_followed_by_its_cvv() -> None:
    text = "card 4539 1488 0343 6467 123 exp 12/27"
    card = next(f for f in find_private_data(text) if f.kind == "payment_card")
    assert text[card.start : card.end] == "4539 1488 0343 6467"
    labelled = find_private_data("card 4539148803436467 CVV: 123")
    assert {f.kind for f in labelled} == {"payment_card", "card_security_code"}


def test_published_test_cards_and_example_ibans_are_documentation() -> None:
    assert find_private_data("test with 4242 4242 4242 4242 or GB82 WEST 1234 5698 7654 32") == []


def test_the_default_region_for_national_numbers_is_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uk = "call 020 7946 0321 today"
    monkeypatch.setenv("REFUSALKIT_PHONE_REGION", "GB")
    assert [f.kind for f in find_private_data(uk)] == ["phone"]
    monkeypatch.setenv("REFUSALKIT_PHONE_REGION", "US")
    assert find_private_data(uk) == []


BODY = st.lists(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        min_size=64,
        max_size=64,
    ),
    min_size=2,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    body=BODY,
    prefix=st.sampled_from(["", "> ", ">> ", "    ", "\t", "# ", "// ", " * "]),
    armour=st.sampled_from(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", ""]),
    case=st.sampled_from([str, str.lower, str.upper]),
    end=st.booleans(),
    headers=st.booleans(),
    escaped=st.booleans(),
)
def test_the_whole_key_block_is_redacted(
    body: list[str], prefix: str, armour: str, case: object, end: bool, headers: bool, escaped: bool
) -> None:
    """Whatever the quoting, indentation, headers, letter case or missing END: no 8 characters of
    the key body survive redaction (the span runs to the end of the block of key-like lines)."""
    lines = [f"-----BEGIN {armour}PRIVATE KEY-----"]
    if headers:
        lines += [
            "Proc-Type: 4,ENCRYPTED",
            "DEK-Info: AES-128-CBC,3F2A9C0D1E2B4A5F6E7D8C9B0A1F2E3D",
            "",
        ]
    lines += body
    if end:
        lines.append(f"-----END {armour}PRIVATE KEY-----")
    block = "\n".join(prefix + case(x) for x in lines)  # type: ignore[operator]
    if escaped:
        block = block.replace("\n", "\\n")
    text = f"Here is the key:\n{block}\nThat is all."
    out = redact_text(text, Keyring.generate().redactor())
    for line in body:
        shown = case(line)  # type: ignore[operator]
        assert not any(shown[i : i + 8] in out for i in range(len(shown) - 7)), out
    assert out.endswith("That is all.") or not end or escaped
