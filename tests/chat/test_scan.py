"""The shared scanner's public API (``refusalkit.chat.scan``/``redact``/``ScanFinding``): kinds,
spans in the original text, keyed tokens, never a value; redaction replaces each whole span and
fails closed (docs/design/chat-guard.md, "The scanner")."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.chat import ScanFinding, redact, scan
from refusalkit.chat import _scan as scan_module
from refusalkit.chat._scrub import redact_text
from refusalkit.keyring import Keyring
from refusalkit.redact import Redactor

AWS = "AKIAQ3EGRT5WZ7XK2LMN"
CARD = "4539 1488 0343 6467"
EMAIL = "bob.martin@contoso-corp.com"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor("k1", bytes(range(32)))


def test_findings_carry_class_span_and_keyed_token(redactor: Redactor) -> None:
    text = f"key {AWS}, card {CARD}, mail {EMAIL}."
    found = scan(text, redactor)
    assert [f.kind for f in found] == [
        "secret:aws_access_key_id",
        "private-data:payment_card",
        "private-data:email",
    ]
    assert [text[f.start : f.end] for f in found] == [AWS, CARD, EMAIL]
    assert found[0].token == redactor.token("secret:aws_access_key_id", AWS)
    # personal data is tokenised by its normalised value: the card with or without spaces
    assert found[1].token == redactor.token("private-data:payment_card", CARD.replace(" ", ""))
    assert found[2].token == redactor.token("private-data:email", EMAIL)


def test_to_dict_never_holds_the_value(redactor: Redactor) -> None:
    (finding,) = scan(f"the key is {AWS}", redactor)
    wire = finding.to_dict()
    assert set(wire) == {"kind", "span", "token"}
    assert wire["span"] == [11, 11 + len(AWS)]
    assert AWS[:8] not in json.dumps(wire)


def test_redact_replaces_whole_spans_and_keeps_the_rest(redactor: Redactor) -> None:
    text = f"Use {AWS} and pay with {CARD}. Thanks!"
    out, found = redact(text, redactor)
    assert out == f"Use {found[0].token} and pay with {found[1].token}. Thanks!"
    assert redact_text(text, redactor) == out  # the chat guard's own redaction is this scanner


def test_clean_text_passes_unchanged(redactor: Redactor) -> None:
    text = "Nothing to see here: a plain sentence about the weather."
    assert scan(text, redactor) == ()
    assert redact(text, redactor) == (text, ())


def test_a_keyring_gives_the_redactor() -> None:
    redactor = Keyring.generate().redactor()
    (finding,) = scan(AWS, redactor)
    assert finding.token.startswith(f"<redacted:hmac-sha256:{redactor.key_id}:")


def test_lone_surrogate_becomes_replacement_character(redactor: Redactor) -> None:
    out, found = redact(f"x\ud800 {AWS}", redactor)
    assert out.startswith("x\ufffd ")
    assert AWS not in out
    assert found[0].start == 3


def test_a_str_subclass_cannot_steer_the_scan(redactor: Redactor) -> None:
    class Sly(str):
        def isascii(self) -> bool:
            raise RuntimeError("no")

        def __getitem__(self, key: object) -> str:
            return ""

    out, found = redact(Sly(f"k {AWS}"), redactor)
    assert AWS not in out
    assert [f.kind for f in found] == ["secret:aws_access_key_id"]


def test_a_scan_that_fails_replaces_the_whole_text(
    redactor: Redactor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str) -> list[object]:
        raise RuntimeError("detector crashed")

    monkeypatch.setattr(scan_module, "find_secrets", broken)
    text = f"a secret {AWS} in here"
    out, found = redact(text, redactor)
    assert out == redactor.token("unscanned", text)
    assert [(f.kind, f.start, f.end) for f in found] == [("unscanned", 0, len(text))]


def test_invalid_span_is_rejected() -> None:
    with pytest.raises(ValueError, match="span"):
        ScanFinding("secret:x", 5, 2, "<t>")


@given(st.text(max_size=60), st.text(max_size=60))
def test_spans_point_into_the_original_text(before: str, after: str) -> None:
    redactor = Redactor("k1", bytes(32))
    text = f"{before} {AWS} {after}"
    found = scan(text, redactor)
    out, again = redact(text, redactor)
    assert found == again
    assert AWS not in out
    cleaned = scan_module._checkable(text)
    assert any(AWS in cleaned[f.start : f.end] for f in found)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
