"""The hot path's shortcuts give exactly what the general functions give (docs/design/decision.md).

Each shortcut is checked against the function it replaces: literal regexes against RE2, the
IPv4 parser against ``ipaddress``, ``make_subject`` against the constructor, and a whole decision's
request digest against the keyed HMAC of ``canonical_json``. (The canonical encoder's own fast path
is pinned in tests/model/test_canonical.py, ``Redactor`` in tests/test_redact.py, ``stamp`` in
tests/decide/test_stamps.py.)
"""

from __future__ import annotations

import ipaddress
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit._internal.records import make_subject
from refusalkit.decide._conditions import _ip, _ipv4
from refusalkit.decide._regex import re2_compile, regex_literal, search_predicate
from refusalkit.keyring import Keyring
from refusalkit.model import Subject, canonical_json


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
