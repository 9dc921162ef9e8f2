"""The hot path's shortcuts give exactly what the general functions give (docs/design/decision.md).

Each shortcut is checked against the function it replaces: ``canonical_bytes`` (both of its
encoders) against ``rfc8785``, ``FastMac`` against ``Redactor`` and ``hmac``, ``stamp`` against
``format_timestamp`` and RFC 9562's layout, literal regexes against RE2, the IPv4 parser against
``ipaddress``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import os
import re
import uuid
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide import _fast
from refusalkit.decide._conditions import _ip, _ipv4
from refusalkit.decide._fast import (
    FastMac,
    canonical_bytes,
    encode_json,
    encode_orjson,
    plain,
    stamp,
)
from refusalkit.decide._records import make_subject
from refusalkit.decide._regex import re2_compile, regex_literal, search_predicate
from refusalkit.keyring import Keyring
from refusalkit.model import Subject, canonical_json, format_timestamp

SAFE = 2**53 - 1
ENCODERS = [encode_json] + ([encode_orjson] if encode_orjson is not None else [])

# Text with the characters JCS treats specially: controls, quote, backslash, DEL, U+2028,
# non-ASCII and astral characters.
tricky_text = st.text(
    st.one_of(
        st.sampled_from(['"', "\\", "\x00", "\x1f", "\x7f", "\u2028", "é", "\U0001f600", "/"]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=12,
)
ascii_keys = st.text(st.characters(max_codepoint=127), max_size=6)
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-SAFE, max_value=SAFE) | tricky_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(ascii_keys, children, max_size=4)
    ),
    max_leaves=16,
)


@settings(max_examples=200)
@given(plain_values)
def test_plain_values_encode_as_rfc8785_with_every_encoder(value: Any) -> None:
    assert plain(value)
    expected = canonical_json(value)
    for encode in ENCODERS:
        assert encode(value) == expected, encode
    assert canonical_bytes(value) == expected


class Text(str):
    """A str subclass: not plain (an encoder might treat it differently)."""


@pytest.mark.parametrize(
    "value",
    [
        {"x": 1.0},
        {"x": [0.1, -0.0, 1e21, 1e-7]},
        {"é": 1, "e": 2},
        {"\U0001f600": 1, "\uff61": 2},  # UTF-16 order differs from code point order
        {"t": (1, "a")},
        {"s": Text("x")},
        {Text("k"): 1},
        OrderedDict([("b", 1), ("a", 2)]),
        [{"a": 1.5}],
        3.5,
    ],
)
def test_values_off_the_fast_path_go_to_rfc8785(value: Any) -> None:
    assert not plain(value)
    assert canonical_bytes(value) == canonical_json(value)


@pytest.mark.parametrize(
    "value",
    [{1: "a"}, {"a": float("nan")}, {"s": "\ud800"}, {None: 1}, {"n": 2**53}, [-(2**53)]],
)
def test_what_rfc8785_refuses_is_refused_with_its_error(value: Any) -> None:
    with pytest.raises(Exception) as expected:
        canonical_json(value)
    with pytest.raises(type(expected.value)):
        canonical_bytes(value)


@settings(max_examples=100)
@given(st.binary(min_size=1, max_size=150), st.text(max_size=12), st.text(max_size=40))
def test_fast_mac_equals_redactor_and_hmac(key: bytes, field_class: str, value: str) -> None:
    keyring = Keyring({"k9": key}, "k9")
    fast, redactor = FastMac(keyring), keyring.redactor()
    assert fast.token(field_class, value) == redactor.token(field_class, value)
    data = value.encode("utf-8", "surrogatepass")
    assert fast.digest(data) == redactor.digest(data)
    assert fast.digest(data) == "hmac-sha256:k9:" + hmac.new(key, data, hashlib.sha256).hexdigest()
    for other in (12, None, [1, "x"], {"a": True}):  # non-strings: the Redactor's own path
        assert fast.token(field_class, other) == redactor.token(field_class, other)


def test_stamp_gives_a_uuid7_and_the_time_of_the_same_millisecond() -> None:
    for _ in range(2000):
        decision_id, decided_at = stamp()
        parsed = uuid.UUID(decision_id)
        assert (parsed.version, parsed.variant, str(parsed)) == (7, uuid.RFC_4122, decision_id)
        ms = parsed.int >> 80
        moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        assert decided_at == format_timestamp(moment)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_random_pool() -> None:
    stamp()  # the pool is filled now
    pending = list(_fast._pool)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(write, ",".join(stamp()[0][-22:] for _ in range(len(pending))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as handle:
        child_tails = set(handle.read().split(","))
    os.waitpid(pid, 0)
    assert child_tails
    assert not child_tails & set(pending)


def test_make_subject_equals_the_constructor() -> None:
    for agent, session in (("a", "s"), (None, "s"), ("a", None), (None, None)):
        assert make_subject(agent, session) == Subject(agent, session)


# -- literal regexes and IPv4 -------------------------------------------------------------------

_pieces = st.sampled_from(
    [
        "rm",
        " ",
        "-rf",
        ".",
        r"\.",
        r"\ ",
        r"\-",
        "/",
        "é",
        r"\d",
        "a{2}",
        "(?i)",
        r"\n",
        "\\0",
        "x|y",
    ]
)


@settings(max_examples=200)
@given(st.lists(_pieces, max_size=5).map("".join), st.text(max_size=16))
def test_a_literal_regex_is_a_substring_test(pattern: str, noise: str) -> None:
    try:
        regex = re2_compile(pattern)
    except Exception:
        return
    literal = regex_literal(pattern)
    predicate = search_predicate(pattern)
    for value in (noise, "sudo rm -rf /", "a.b", "x.é", noise + pattern, "aa1"):
        expected = regex.search(value) is not None
        assert predicate(value) is expected
        if literal is not None:
            assert (literal in value) is expected


def test_regex_literal_is_conservative() -> None:
    assert regex_literal(re.escape("rm -rf /")) == "rm -rf /"
    assert regex_literal("") == ""
    for pattern in ("a.b", r"\d", r"\0", "(?i)x", "a|b", r"\n", "^a", "a$", "[^a]"):
        assert regex_literal(pattern) is None, pattern


octets = st.one_of(
    st.integers(0, 300).map(str),
    st.sampled_from(["00", "01", "", "-1", "1a", "٣", "0x1", " 1", "256", "999", "1000"]),
)


@settings(max_examples=200)
@given(st.lists(octets, min_size=1, max_size=5).map(".".join))
def test_ipv4_parse_agrees_with_ipaddress(text: str) -> None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        expected = None
    else:
        expected = ((address.version, int(address)),)
    assert _ip.__wrapped__(text) == expected
    if _ipv4(text) is not None:
        assert expected == ((4, _ipv4(text)),)


def test_ip_still_reads_ipv6() -> None:
    assert _ip.__wrapped__("::1") == ((6, 1),)
    assert _ip.__wrapped__("10.0.0.1") == ((4, 0x0A000001),)


def test_every_shortcut_is_byte_equal_inside_a_decision() -> None:
    """The request digest is the keyed HMAC of the request's RFC 8785 bytes."""
    from refusalkit.decide import DecisionPoint, Pack  # noqa: PLC0415

    keyring = Keyring.generate()
    pack = Pack.from_mapping({"policy": "p", "version": "1", "rules": []})
    dp = DecisionPoint(pack, keyring)
    for request in (
        {"tool": "t", "args": {"n": 1, "s": "é\u2028\x01"}, "caller": {"agent": "a"}},
        {"tool": "t", "args": {"f": 1.5}, "input": "x"},
        {"tool": "t", "args": {"\U0001f600": 1, "\uff61": 2}},
    ):
        digest = dp.decide(request).request_digest
        assert digest == keyring.redactor().digest(canonical_json(request))


def test_nesting_deeper_than_orjson_allows_still_encodes() -> None:
    value: Any = "x"
    for depth in range(300):
        value = [value] if depth % 2 else {"k": value}
    assert plain(value)
    assert canonical_bytes(value) == canonical_json(value)


def test_threads_sharing_a_decision_point_get_the_single_threaded_trails() -> None:
    """Shared caches (steps, directory hits, the last token) never mix up two requests."""
    import threading  # noqa: PLC0415

    from refusalkit.decide import DecisionPoint, load_pack  # noqa: PLC0415
    from refusalkit.examples import example_path  # noqa: PLC0415

    keyring = Keyring.generate()
    pack = load_pack(example_path("agent-tools.yaml"))
    lines = example_path("requests.jsonl").read_text(encoding="utf-8").splitlines()
    reference = DecisionPoint(pack, keyring, deadline_ms=10_000)
    expected = [reference.decide_line(line).why_trail for line in lines]
    shared = DecisionPoint(pack, keyring, deadline_ms=10_000)
    failures: list[int] = []

    def work() -> None:
        for _ in range(20):
            for number, line in enumerate(lines):
                if shared.decide_line(line).why_trail != expected[number]:
                    failures.append(number)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
