"""Precision and the context detectors (docs/design/chat-guard.md, "Detectors"; docs/chat.md,
"Precision").

A text that holds no credential and no personal data gets no finding: gitleaks' own negative
examples (``tests/vectors/gitleaks-negatives``), the project's own source and docs, git SHAs,
UUIDs and base64 images. Passwords are found by context (prose and ``-p`` flags) with shape
filters; digit runs are judged as wholes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from datetime import datetime
from pathlib import Path

import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.chat import redact, scan
from refusalkit.redact import Redactor

ROOT = Path(__file__).resolve().parents[2]
NEGATIVES = ROOT / "tests" / "vectors" / "gitleaks-negatives" / "negatives.jsonl"
REDACTOR = Redactor("k1", bytes(32))


def kinds(text: str) -> list[str]:
    return [f.kind for f in scan(text, REDACTOR)]


def negatives() -> list[dict[str, object]]:
    return [json.loads(x) for x in NEGATIVES.read_text("utf-8").splitlines() if x.strip()]


def test_gitleaks_negatives_without_a_credential_get_no_finding() -> None:
    rows = [r for r in negatives() if not r["credential_shaped"]]
    assert len(rows) > 250
    flagged = [r["text"] for r in rows if kinds(str(r["text"]))]
    assert flagged == []


@pytest.mark.parametrize(
    "text",
    [
        "key = AKIAXXXXXXXXXXXXXXXX",
        'msgstr "Näytä asiakirjamallikansio."',
        "https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg",
        "GITHUB_API_KEY=\nDYNATRACE_API_KEY=",
        "snowflake.password=\njdbc.snowflake.url=",
        "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
        "xoxb-xoxb-my-bot-token",
        "xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere",
        'token = "sha256~XXXXXXXXXX_PUT_YOUR_TOKEN_HERE_XXXXXXXXXXXX"',
        'API_KEY="glc_111111111111111111111111111111111111111111="',
        "SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`",
        'sumo_access_key = "<SUMOLOGIC ACCESS KEY>"',
        "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    ],
)
def test_named_false_positives(text: str) -> None:
    assert kinds(text) == []


def test_a_placeholder_word_by_chance_inside_a_random_token_is_no_filler() -> None:
    token = "xoxp-644277230022-763975992265-HFb5ssScv057EnOpIKZhEreZ"  # "hEre", "Here" inside
    assert kinds(f"token {token}") == ["secret:slack_token"]
    assert kinds("broker: amqp://guest2:m0nkey.hgx8EbOKH@rabbit.internal:5672/") == [
        "secret:connection_string_password"
    ]


def test_a_real_key_beside_the_fillers_is_still_found() -> None:
    assert kinds("key = AKIAQ3EGRT5WZ7XK2LMN") == ["secret:aws_access_key_id"]
    assert kinds("key = akiaq3egrt5wz7xk2lmn") == ["secret:aws_access_key_id"]  # case-mangled
    assert kinds("GITHUB_API_KEY=Xk9#mQ2vLp7") == ["secret:credential_assignment"]


# -- passwords by context ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Password for admin: Xk9#mQ2vL", "Xk9#mQ2vL"),
        ("The password for the prod db is Zq8!vR2pWm", "Zq8!vR2pWm"),
        ("Use Tr0ub4dor&3x as the password.", "Tr0ub4dor&3x"),
        ("Try 'N0t-s0-s3cret' as your new passphrase", "N0t-s0-s3cret"),
        ("the admin password's Zq8!vR2pWm", "Zq8!vR2pWm"),
        ("mysql -u root -pS3cr3tPw! mydb", "S3cr3tPw!"),
        ("mysqldump --single-transaction -h db -u app -pq7Rt9zWx billing > dump.sql", "q7Rt9zWx"),
        ("sshpass -p 'hunter22X' ssh admin@host", "hunter22X"),
        ("Password for the staging admin: Falcon_GxsVakR", "Falcon_GxsVakR"),
        ("Use Falcon.LbwSkkDU as the password for now.", "Falcon.LbwSkkDU"),
        ("mysql -h db -u report -pm0nkey&PxcQUaP analytics", "m0nkey&PxcQUaP"),
    ],
)
def test_passwords_in_prose_and_flags(text: str, value: str) -> None:
    out, found = redact(text, REDACTOR)
    assert [f.kind for f in found] == ["secret:credential_assignment"]
    assert value not in out


@pytest.mark.parametrize(
    "text",
    [
        "the password field",
        "Fill in the password field and press enter.",
        "Use a strong value as the password.",
        "The password for the account is required.",
        "the password for admin: ${ADMIN_PASSWORD}",
        "Password for admin: <your password>",
        "the user's password's length is checked",
        "mysql -u root -p mydb",
        "mysql -u root -p$MYSQL_PWD mydb",
        "mkdir -p build/output",
        "docker run -p 8080:80 nginx",
        "ssh -p 2222 host",
    ],
)
def test_password_words_without_a_password(text: str) -> None:
    assert kinds(text) == []


# -- digit runs ----------------------------------------------------------------------------

CARD = "4539148803436467"


@pytest.mark.parametrize("sep", [" ", "-", ".", "_", "/", "\u00a0", "\u2009", "\u202f"])
def test_card_with_any_separator(sep: str) -> None:
    text = f"paid with {sep.join(CARD[i : i + 4] for i in range(0, 16, 4))} today"
    out, found = redact(text, REDACTOR)
    assert [f.kind for f in found] == ["private-data:payment_card"]
    assert found[0].token == REDACTOR.token("private-data:payment_card", CARD)
    assert "0343" not in out


@pytest.mark.parametrize("number", ["6759649826438453", "122000000000003", "5019717010103742"])
def test_other_issuers(number: str) -> None:
    assert kinds(f"card {number}") == ["private-data:payment_card"]


@pytest.mark.parametrize(
    "text",
    [
        "4012-8888-8888-1882",  # a Luhn-valid prefix of a longer run is not a card
        "45391488034364671234",  # a card's digits followed by more digits
        "ref 4539-1488-0343-6467-9",  # part of a longer run
        "oid 1.2.840.113549.1.1.1",
        "ts 1700000000.123456",
        "AL47 2121 1009 0000 0002 3569 8740",  # an invalid IBAN is not a card
        "| 4539 | 1488 | 0343 | 6467 |",  # a table of numbers stays apart
    ],
)
def test_digit_runs_that_are_not_cards(text: str) -> None:
    assert kinds(text) == []


def test_card_then_security_code() -> None:
    out, found = redact(f"card {CARD[:4]} {CARD[4:8]} {CARD[8:12]} {CARD[12:]} 123", REDACTOR)
    assert [f.kind for f in found] == ["private-data:payment_card"]
    assert CARD[8:12] not in out


@pytest.mark.parametrize("ssn", ["536-22-8119", "536 22 8119", "536228119", "536.22.8119"])
def test_ssn_beside_its_word(ssn: str) -> None:
    assert kinds(f"SSN: {ssn}") == ["private-data:us_ssn"]


@pytest.mark.parametrize(
    "text", ["order 536228119 shipped", "536 22 8119 apples", "SSN 5362281190"]
)
def test_undashed_nine_digits_need_the_word(text: str) -> None:
    assert kinds(text) == []


# -- benign text nobody wrote for this --------------------------------------------------------


def _project_chunks() -> list[str]:
    paths = sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
    chunks = []
    for path in paths:
        text = path.read_text("utf-8")
        chunks += [text[i : i + 4000] for i in range(0, len(text), 4000)]
    return chunks


# Example values the project's docs and docstrings show on purpose (docs/chat.md, Precision)
DOCUMENTED = (
    "AKIAQ3EGRT5WZ7XK2LMN",
    "Xk9#mQ2v",
    "Xk9$mQ2v",
    "name [at] host [dot] tld",
    "LV80 bANK 0000 4351 9500 1",
)


def test_project_source_and_docs_hold_only_their_documented_examples() -> None:
    """The project's own text talks about secrets and shows placeholders, patterns and redaction
    tokens; the only findings in it are the example values it shows on purpose."""
    undocumented = [
        chunk[max(0, f.start - 40) : f.end + 10]
        for chunk in _project_chunks()
        for f in scan(chunk, REDACTOR)
        if not any(example in chunk[f.start : f.end] for example in DOCUMENTED)
    ]
    assert undocumented == []


@settings(deadline=None)
@given(st.binary(min_size=20, max_size=20))
def test_git_shas_and_digests(raw: bytes) -> None:
    sha1 = hashlib.sha1(raw).hexdigest()
    text = f"commit {sha1}\nsha256:{hashlib.sha256(raw).hexdigest()} id {uuid.UUID(bytes=raw[:16])}"
    assert kinds(text) == []


@settings(deadline=None)
@given(st.binary(min_size=64, max_size=600))
def test_base64_images(raw: bytes) -> None:
    png = b"\x89PNG\r\n\x1a\n" + raw
    text = f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}">'
    assert kinds(text) == []


@pytest.mark.parametrize(
    "text",
    [
        '"token": "<redacted:hmac-sha256:k1:...>"',
        '"token": "<redacted:hmac-sha256:k1:0123456789abcdef>"',
        "password = <redacted:hmac-sha256:k2:fedcba9876543210>",
    ],
)
def test_a_redaction_token_in_place_of_a_secret_is_not_one(text: str) -> None:
    """What a redacted trail or result holds where a secret was is refusalkit's own token."""
    assert kinds(text) == []


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(min_value=datetime(1800, 1, 1), max_value=datetime(2999, 12, 31)),
    st.sampled_from(
        [
            "%Y-%m-%d %H:%M",
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%dT%H:%M",
            "%Y/%m/%d %H:%M",
            "%d.%m.%Y %H:%M",
            "%d/%m/%Y %H:%M",
            "%d-%m-%Y %H:%M:%S",
        ]
    ),
    st.sampled_from(["from\n{} UTC, 3 rounds", "measured {} (load 4.7)", "{}", "at {} we"]),
)
def test_a_date_and_time_is_no_phone_number(moment: datetime, form: str, around: str) -> None:
    """A timestamp in prose ("2026-12-02 02:11 UTC") holds digits and separators shaped like a
    national phone number ("2026-12-02 02" is a valid one in some regions); it is a time (years
    1800 to 2999, day first or year first)."""
    stamp = moment.strftime(form)
    assert kinds(around.format(stamp)) == []


def test_a_phone_number_beside_a_date_is_still_found() -> None:
    assert "private-data:phone" in kinds("on 2026-12-02 call +44 20 7946 0958 at 10:00")


@pytest.mark.parametrize("tail", [":00", ":59", ":30:00"])
def test_a_time_written_after_a_phone_number_does_not_hide_it(tail: str) -> None:
    """Only a candidate that is itself a date with its hour is a time: digits after a number
    do not make it one (a model cannot append ``:00`` to slip a number past)."""
    assert "private-data:phone" in kinds(f"call +44 20 7946 0958{tail} today")
    assert "private-data:phone" in kinds(f"call (212) 555-2368{tail} today")


def phone_spans(text: str) -> list[str]:
    return [text[f.start : f.end] for f in scan(text, REDACTOR) if f.kind == "private-data:phone"]


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("+44 20 7946 0958 10:30", "+44 20 7946 0958"),
        ("call +44 20 7946 0958 2 times", "+44 20 7946 0958"),
        ("call +1 212 555 2368 10 times", "+1 212 555 2368"),
        ("call 212 555 2368 10:30 today", "212 555 2368"),
        ("call +44 20 7946 0958 12 34", "+44 20 7946 0958"),
    ],
)
def test_digits_written_after_a_phone_number_do_not_hide_it(text: str, phone: str) -> None:
    """Digits after a number join its run of digits and spaces (``0958 10:30``); the run as a
    whole is no number, so its prefixes that end before a space are read too. The finding
    covers the number, not what follows it."""
    assert phone_spans(text) == [phone]


def test_digits_after_a_national_number_do_not_hide_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFUSALKIT_PHONE_REGION", "GB")
    assert phone_spans("call 020 7946 0958 2 times") == ["020 7946 0958"]
    assert phone_spans("call 020 7946 0958 10:30") == ["020 7946 0958"]


@pytest.mark.parametrize(
    "text",
    [
        "ref 2123 4567 8901 2345 ok",  # a card-shaped run (Luhn fails): not a number and digits
        "ref 2123 4567 8901 ok",  # three groups of 4: an identifier's digits
        "ref 2123 4567 8901 23 ok",
        "at 2026-12-02 02:11 UTC 5 runs",
        "from 02.12.2026 14:30 3 rounds",
        "version 2.4.1 10 items",
        "INV-2026-000417 3 lines",
    ],
)
def test_a_run_judged_whole_gives_no_phone_from_its_prefix(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In Norway ``2123 4567`` is a valid number: a longer run that reads as one number (a
    card's or an identifier's digit groups), a date with its time, a version or an identifier
    is still judged as a whole."""
    monkeypatch.setenv("REFUSALKIT_PHONE_REGION", "NO")
    assert kinds(text) == []


def example_phones() -> list[str]:
    """libphonenumber's example numbers, international format, that the guard finds alone."""
    out = []
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        number = phonenumbers.example_number_for_type(region, phonenumbers.PhoneNumberType.MOBILE)
        if number is not None:
            shown = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
            if phone_spans(f"call {shown} today") == [shown]:
                out.append(shown)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(example_phones()),
    st.text("0123456789", min_size=1, max_size=8),
    st.sampled_from(["", ":30", ":00:00", " times", " am", " 12", "."]),
)
def test_a_valid_phone_followed_by_a_space_and_digits_is_found(
    phone: str, digits: str, tail: str
) -> None:
    text = f"call {phone} {digits}{tail} today"
    found = [f for f in scan(text, REDACTOR) if f.kind == "private-data:phone"]
    assert found, text
    assert found[0].start == len("call "), text
    assert found[0].end >= len("call ") + len(phone), text


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("call 0044 20 7946 0958 now", "0044 20 7946 0958"),
        ("tel 00 44 20 7946 0958", "00 44 20 7946 0958"),
        ("ring 0033 1 42 68 53 00 please", "0033 1 42 68 53 00"),
        ("call 0044 20 7946 0958 10:30", "0044 20 7946 0958"),
    ],
)
def test_a_number_dialled_with_the_international_prefix_00_is_found(text: str, phone: str) -> None:
    """``00`` is the international call prefix most countries dial; ``0044 20 7946 0958`` is
    the number ``+44 20 7946 0958`` and is found as that one."""
    assert phone_spans(text) == [phone]
    plus = text.replace(phone, "+" + phone[2:].lstrip(" "))
    assert {f.token for f in scan(text, REDACTOR) if f.kind == "private-data:phone"} == {
        f.token for f in scan(plus, REDACTOR) if f.kind == "private-data:phone"
    }


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(example_phones()))
def test_every_example_number_is_found_written_with_00(shown: str) -> None:
    dialled = "00" + shown[1:]
    assert phone_spans(f"call {dialled} today") == [dialled]


def test_00_before_digits_that_are_no_number_is_no_finding() -> None:
    assert kinds("build 0012 3456 7890 done") == []
    assert kinds("offset 0000 0000 0000") == []
