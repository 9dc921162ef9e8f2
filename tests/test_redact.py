"""Redaction tokens (docs/design/decision.md): keyed, correlating, and never revealing the value."""

from __future__ import annotations

import hashlib
import hmac
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.keyring import Keyring
from refusalkit.redact import Redactor, value_text

TOKEN = re.compile(r"<redacted:hmac-sha256:(k\d+):([0-9a-f]{16})>")


def test_token_matches_the_published_construction() -> None:
    key = bytes(range(32))
    token = Redactor("k1", key).token("credential-file", "/workspace/.env")
    expected = hmac.new(key, b"credential-file\x00/workspace/.env", hashlib.sha256).hexdigest()
    assert token == f"<redacted:hmac-sha256:k1:{expected[:16]}>"


@given(st.text(min_size=8, max_size=200), st.text(min_size=1, max_size=30))
def test_token_never_contains_an_8_character_substring(value: str, field_class: str) -> None:
    token = Keyring.generate().redactor().token(field_class, value)
    assert TOKEN.fullmatch(token)
    assert not any(value[i : i + 8] in token for i in range(len(value) - 7))


@given(st.text(max_size=100), st.text(max_size=100))
def test_same_key_and_value_correlate_different_values_do_not(a: str, b: str) -> None:
    red = Redactor("k1", b"\x01" * 32)
    assert red.token("c", a) == red.token("c", a)
    if a != b:
        assert red.token("c", a) != red.token("c", b)


def test_class_separates_tokens_and_keys_separate_tokens() -> None:
    one, two = Redactor("k1", b"\x01" * 32), Redactor("k1", b"\x02" * 32)
    assert one.token("a", "v") != one.token("b", "v")
    assert one.token("a", "v") != two.token("a", "v")


def test_non_string_values_are_redacted_as_canonical_json() -> None:
    assert value_text({"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'
    red = Redactor("k1", b"\x03" * 32)
    assert red.token("n", 42) == red.token("n", "42")


def test_digest_is_full_length_and_keyed() -> None:
    digest = Redactor("k7", b"\x04" * 32).digest(b"{}")
    assert re.fullmatch(r"hmac-sha256:k7:[0-9a-f]{64}", digest)


@settings(max_examples=100)
@given(st.binary(min_size=1, max_size=150), st.text(max_size=12), st.text(max_size=40))
def test_redactor_equals_hmac(key: bytes, field_class: str, value: str) -> None:
    """The prepared-state HMAC is RFC 2104's, for keys shorter and longer than a block."""
    redactor = Redactor("k9", key)
    data = value.encode("utf-8", "surrogatepass")
    expected = hmac.new(key, data, hashlib.sha256).hexdigest()
    assert redactor.digest(data) == f"hmac-sha256:k9:{expected}"
    for item in (value, 12, None, [1, "x"], {"a": True}):
        text = value_text(item).encode("utf-8", "surrogatepass")
        try:
            token = redactor.token(field_class, item)
        except UnicodeEncodeError:  # a lone surrogate cannot be a token
            assert not _encodable(field_class + value_text(item))
            continue
        mac = hmac.new(key, field_class.encode() + b"\x00" + text, hashlib.sha256).hexdigest()
        assert token == f"<redacted:hmac-sha256:k9:{mac[:16]}>"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
