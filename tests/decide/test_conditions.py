"""Every condition kind, three-valued (docs/design/policy.md, Conditions), and the glob/regex
compilers."""

from __future__ import annotations

from typing import Any

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide._conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    ConditionSpecError,
    compile_condition,
)
from refusalkit.decide._glob import compile_glob, glob_to_regex
from refusalkit.decide._logic import Tri
from refusalkit.decide._regex import re2_compile, required_literals, search_predicate
from refusalkit.keyring import Keyring
from support.reference_glob import reference_glob


def outcome(spec: Any, value: Any) -> Tri:
    return compile_condition(spec).check(value)


def which(spec: Any, value: Any) -> int | None:
    return compile_condition(spec).which(value)


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("fs.write", "fs.write", TRUE),
        ("fs.write", "fs.read", FALSE),
        ("fs.write", 3, UNKNOWN),
        (3, 3, TRUE),
        (3, 3.0, TRUE),
        (3, 4, FALSE),
        (3, "3", UNKNOWN),
        (True, True, TRUE),
        (True, 1, UNKNOWN),
        (None, None, TRUE),
        (None, "x", UNKNOWN),
    ],
)
def test_scalar_equality_is_typed(spec: Any, value: Any, expected: Tri) -> None:
    assert outcome(spec, value) is expected


@pytest.mark.parametrize(
    ("glob", "value", "matches"),
    [
        ("/workspace/*", "/workspace/a.py", True),
        ("/workspace/*", "/workspace/src/a.py", False),  # * stops at /
        ("/workspace/**", "/workspace/src/deep/a.py", True),  # ** crosses /
        ("**/.env", "/workspace/.env", True),
        ("**/.env", ".env", True),  # **/ also matches no directory
        ("**/.env", "/workspace/.envrc", False),
        ("**/id_rsa*", "/home/u/.ssh/id_rsa.pub", True),
        ("**/id_rsa*", "/home/u/.ssh/id_rsa/x", False),
        ("fs.*", "fs.write", True),
        ("fs.*", "fs", False),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src//.py", False),
        ("a[b]c", "a[b]c", True),  # brackets are literal
        ("/x/**/y/*.txt", "/x/y/a.txt", True),
        ("/x/**/y/*.txt", "/x/1/2/y/a.txt", True),
        ("/x/**/y/*.txt", "/x/1/2/y/z/a.txt", False),
    ],
)
def test_glob(glob: str, value: str, matches: bool) -> None:
    assert compile_glob(glob)(value) is matches
    assert (outcome({"glob": glob}, value) is TRUE) is matches


def test_glob_list_names_the_alternative_that_matched() -> None:
    cond = compile_condition({"glob": ["**/.env", "/etc/**"], "class": "credential-file"})
    assert cond.check("/etc/passwd") is TRUE
    assert cond.which("/etc/passwd") == 1
    assert cond.describe(TRUE, "/etc/passwd") == "glob /etc/**"
    assert cond.check("/tmp/x") is FALSE
    assert cond.which("/tmp/x") is None
    assert cond.describe(FALSE, "/tmp/x") == "glob [**/.env, /etc/**]"
    assert cond.field_class == "credential-file"


def test_string_operators_on_non_strings_are_unknown() -> None:
    for spec in ({"glob": "*"}, {"regex": "a"}, {"prefix": "/"}, {"cidr": "10.0.0.0/8"}):
        assert outcome(spec, 42) is UNKNOWN
        assert outcome(spec, ["a"]) is UNKNOWN


def test_regex_is_an_unanchored_re2_search() -> None:
    assert outcome({"regex": "rm -rf"}, "sudo rm -rf /") is TRUE
    assert outcome({"regex": "^rm"}, "sudo rm -rf /") is FALSE
    assert which({"regex": ["x", "(?i)IGNORE previous"]}, "please ignore previous") == 1


def test_regex_rejects_backtracking_only_syntax() -> None:
    with pytest.raises(ConditionSpecError, match="RE2"):
        compile_condition({"regex": "(a)\\1"})  # backreferences are not RE2


def test_prefix() -> None:
    assert outcome({"prefix": ["/tmp/", "/workspace/"]}, "/workspace/a") is TRUE
    assert which({"prefix": ["/tmp/", "/workspace/"]}, "/workspace/a") == 1
    assert outcome({"prefix": "/workspace/"}, "/workspacex") is FALSE


def test_in_is_typed() -> None:
    assert outcome({"in": ["main", "release"]}, "main") is TRUE
    assert which({"in": ["main", "release"]}, "main") == 0
    assert outcome({"in": ["main", "release"]}, "dev") is FALSE
    assert outcome({"in": ["main"]}, 1) is UNKNOWN
    assert outcome({"in": [1, 2]}, True) is UNKNOWN  # a boolean is not the number 1
    assert which({"in": [1, 2]}, True) is None
    assert which({"in": [1, 2]}, 2) == 1


def test_range_is_inclusive_and_numeric() -> None:
    spec = {"range": {"min": 1, "max": 10}}
    assert [outcome(spec, v) for v in (0, 1, 10, 10.5)] == [FALSE, TRUE, TRUE, FALSE]
    assert outcome(spec, "5") is UNKNOWN
    assert outcome(spec, True) is UNKNOWN
    assert outcome({"range": {"max": 0}}, -(10**9)) is TRUE


def test_cidr() -> None:
    spec = {"cidr": ["10.0.0.0/8", "::1/128"]}
    assert (outcome(spec, "10.2.3.4"), which(spec, "10.2.3.4")) == (TRUE, 0)
    assert (outcome(spec, "::1"), which(spec, "::1")) == (TRUE, 1)
    assert outcome(spec, "11.0.0.1") is FALSE
    assert outcome(spec, "intranet.corp") is UNKNOWN  # not an address: cannot tell


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("::ffff:10.0.0.1", TRUE),  # IPv4-mapped (RFC 4291 §2.5.5.2)
        ("::FFFF:a00:1", TRUE),
        ("0:0:0:0:0:ffff:10.1.2.3", TRUE),
        ("64:ff9b::10.0.0.1", TRUE),  # NAT64 well-known prefix (RFC 6052 §2.1)
        ("::ffff:11.0.0.1", FALSE),
        ("64:ff9b::b00:1", FALSE),
        ("2002:a00:1::1", FALSE),  # 6to4 names a v6 host behind 10.0.0.1, not 10.0.0.1
        ("::10.0.0.1", FALSE),  # deprecated IPv4-compatible form: not translated
    ],
)
def test_cidr_sees_the_ipv4_host_inside_an_ipv6_address(value: str, expected: Tri) -> None:
    assert outcome({"cidr": "10.0.0.0/8"}, value) is expected


def test_cidr_ipv6_networks_still_match_the_ipv6_form() -> None:
    spec = {"cidr": ["192.168.0.0/16", "::ffff:0:0/96"]}
    assert which(spec, "::ffff:10.0.0.1") == 1
    assert which(spec, "::ffff:192.168.1.1") == 0  # the first network that matches either form


def test_a_mapped_address_is_denied_by_an_ipv4_cidr_rule(keyring: Keyring) -> None:
    rule = {"id": "no_internal", "effect": "deny", "when": {"args.host": {"cidr": "10.0.0.0/8"}}}
    data = {"policy": "t", "version": "1", "default": "allow", "rules": [rule]}
    dp = DecisionPoint(Pack.from_mapping(data), keyring)
    decision = dp.decide({"tool": "net.fetch", "args": {"host": "::ffff:10.0.0.1"}})
    assert (decision.action.value, decision.matched_rule) == ("deny", "no_internal")


def test_not_keeps_unknown_unknown() -> None:
    spec = {"not": {"prefix": "/workspace/"}}
    assert outcome(spec, "/etc/passwd") is TRUE
    assert outcome(spec, "/workspace/a") is FALSE
    assert outcome(spec, 7) is UNKNOWN


@pytest.mark.parametrize(
    "spec",
    [
        {"glob": "a", "regex": "b"},
        {"class": "x"},
        {"like": "a"},
        {"in": []},
        {"range": {"low": 1}},
        {"cidr": "not-a-net"},
        ["a", "b"],
        {"glob": []},
    ],
)
def test_bad_conditions_are_load_errors(spec: Any) -> None:
    with pytest.raises(ConditionSpecError):
        compile_condition(spec)


# -- the compilers agree with plain RE2 --------------------------------------------------------

_glob_parts = st.sampled_from(["*", "**", "**/", "?", "/", "a", "b", ".", "x/", ".env", "-"])
_path_chars = st.sampled_from(["a", "b", "/", ".", "x", "-", "e", "n", "v", "é", "\n"])


@pytest.mark.parametrize(
    ("glob", "value", "expected"),
    [
        ("/etc/**/shadow", "/etc/x\n/shadow", True),
        ("/etc/**", "/etc/x\n/shadow", True),
        ("**/.env", "a\nb/.env", True),
        ("/w/*.py", "/w/a\nb.py", True),  # * crosses a newline, not a slash
        ("/w/*.py", "/w/a/b.py", False),
        ("/w/?", "/w/\n", True),
        ("**", "\n", True),
    ],
)
def test_globs_cross_newlines_on_every_path(glob: str, value: str, expected: bool) -> None:
    assert compile_glob(glob)(value) is expected
    assert search_predicate(glob_to_regex(glob))(value) is expected  # the RE2 path
    assert reference_glob(glob, value) is expected


@settings(max_examples=200)
@given(
    st.lists(_glob_parts, min_size=1, max_size=6).map("".join), st.text(_path_chars, max_size=12)
)
def test_glob_fast_paths_agree_with_re2(glob: str, value: str) -> None:
    expected = re2.search(glob_to_regex(glob), value) is not None
    assert compile_glob(glob)(value) is expected
    assert reference_glob(glob, value) is expected


_regex_parts = st.sampled_from(
    ["rm", "-rf", r"\s+", "(curl|wget)", ".*", "a?", "(?:ab)+", "x|y", r"\b", "[0-9]", "é", "(q)*"]
)


@settings(max_examples=200)
@given(st.lists(_regex_parts, min_size=1, max_size=5).map("".join), st.text(max_size=20))
def test_regex_prefilter_never_loses_a_match(pattern: str, noise: str) -> None:
    regex = re2_compile(pattern)
    predicate = search_predicate(pattern)
    for value in (noise, "sudo rm -rf /", "curl 10.0.0.1", "wget x", "ab" + noise, noise + "xé"):
        assert predicate(value) is (regex.search(value) is not None)


def test_required_literals_are_conservative() -> None:
    assert required_literals(r"\brm\s+-rf") == frozenset({"-rf"})  # the longest mandatory run
    assert required_literals(r"\b(curl|wget)\b") == frozenset({"curl", "wget"})
    assert required_literals("(?i)ignore") is None  # case-insensitive: no prefilter
    assert required_literals("a*") is None


# -- which alternative held ----------------------------------------------------------------------

_ALTERNATIVES = {
    "glob": ["/etc/**", "**/.env", "/h/*", "**/id_rsa*", "/h/**/k", "x"],
    "regex": ["^rm", "rf$", "(?i)SECRET", "a.b", "^$", "/"],
    "prefix": ["/tmp/", "/h/", "-", "/"],
    "under": ["/etc", "**/.aws", "/h/x", "y"],
    "cidr": ["10.0.0.0/8", "::1/128", "192.168.0.0/16", "::ffff:0:0/96", "0.0.0.0/0"],
    "in": ["main", 1, True, None, "x", 2.5],
}
_probe_values = st.one_of(
    st.sampled_from(
        [
            "/etc/passwd",
            "/h/.env",
            "/h/a",
            "/h/id_rsa.pub",
            "rm -rf",
            "SeCrEt",
            "a-b",
            "",
            "/",
            "10.1.2.3",
            "::1",
            "::ffff:192.168.0.1",
            "8.8.8.8",
            "main",
            "x",
            "/h/x/y",
            "/w/.aws",
        ]
    ),
    st.text(alphabet="/ahxe.-rm1:f", max_size=8),
    st.integers(-2, 3),
    st.booleans(),
    st.none(),
    st.just(2.5),
)


@given(
    st.sampled_from(sorted(_ALTERNATIVES)).flatmap(
        lambda op: st.tuples(
            st.just(op), st.lists(st.sampled_from(_ALTERNATIVES[op]), min_size=1, max_size=6)
        )
    ),
    _probe_values,
)
@settings(max_examples=300)
def test_which_names_the_first_alternative_that_holds(case: Any, value: Any) -> None:
    """``which`` is the first alternative whose own condition holds, and is given exactly when
    ``check`` is true; ``describe`` names that alternative (the trail's ``test``)."""
    op, items = case
    cond = compile_condition({op: items})
    alone = [compile_condition({op: [item]}).check(value) for item in items]
    first = next((i for i, o in enumerate(alone) if o is TRUE), None)
    assert cond.which(value) == first
    assert (cond.check(value) is TRUE) is (first is not None)
    if first is not None:
        assert cond.describe(TRUE, value) == cond.tests[first]
    else:
        assert cond.describe(cond.check(value), value) == cond.test_false


def test_tools_sharing_a_plan_each_name_their_own_alternative(keyring: Keyring) -> None:
    """Tools that no rule names exactly share one plan per outcome of the tool conditions; the
    trail still names the glob that matched each tool, asked of that tool's own name."""
    rule = {"id": "r", "effect": "deny", "when": {"tool": {"glob": ["a.*", "b.*"]}}}
    data = {"policy": "t", "version": "1", "default": "allow", "rules": [rule]}
    dp = DecisionPoint(Pack.from_mapping(data), keyring)
    for tool, test in (("a.x", "glob a.*"), ("b.y", "glob b.*"), ("a.z", "glob a.*")):
        step = dp.decide({"tool": tool, "args": {}}).why_trail[0]
        assert (step.rule, step.matched, step.test) == ("r", True, test)
