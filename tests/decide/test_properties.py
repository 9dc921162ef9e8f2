"""Property tests: random requests and random packs never raise out of ``decide``, never allow
what the pack's rules deny, and decisions round-trip through their canonical form, whichever
stage decided (packs with attestation, capabilities, tool schemas and input filters included),
each carrying the reason-code version of its code.

The deny property is checked against a small independent reference evaluator of
docs/design/policy.md
(plain ``re2.search``, a plainly written glob matcher, ``ipaddress``), so a shortcut inside the
engine that loses a match (a literal prefilter, a lookup index) shows up as a disagreement.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import time
from typing import Any

import re2
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack, mint_token, public_key_from_seed
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode, canonical_json
from support.reference_glob import reference_glob
from support.strategies import json_values

KEYRING = Keyring.generate()
FIELDS = ["tool", "args.path", "args.n", "args.host", "caller.agent", "input", "args.deep.x"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from(
        ["fs.write", "fs.read", "/workspace/a", "/etc/passwd", "10.0.0.1", "coder", "", "é"]
    )
)
values = json_values(
    scalars | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    keys=st.text(max_size=5),
    max_size=3,
    max_leaves=10,
)

conditions = st.one_of(
    scalars,
    st.builds(lambda g: {"glob": g}, st.sampled_from(["fs.*", "/workspace/**", "**/.env", "*"])),
    st.builds(lambda r: {"regex": r}, st.sampled_from(["a", "^/etc", "(?i)ignore", "[0-9]+"])),
    st.builds(lambda p: {"prefix": p}, st.sampled_from(["/", "/workspace/", "fs."])),
    st.builds(lambda v: {"in": v}, st.lists(scalars, min_size=1, max_size=3)),
    st.builds(lambda lo: {"range": {"min": lo, "max": lo + 2}}, st.integers(-3, 3)),
    st.builds(lambda c: {"cidr": c}, st.sampled_from(["10.0.0.0/8", "::1/128"])),
    st.builds(lambda p: {"not": {"prefix": p}}, st.sampled_from(["/", "/workspace/"])),
)
when = st.dictionaries(st.sampled_from(FIELDS), conditions, min_size=1, max_size=3)
rules = st.lists(
    st.fixed_dictionaries(
        {
            "effect": st.sampled_from(["allow", "audit", "deny", "block"]),
            "when": when | st.lists(when, min_size=1, max_size=2),
        }
    ),
    max_size=6,
)
requests = st.one_of(
    st.fixed_dictionaries(
        {"tool": st.sampled_from(["fs.write", "fs.read", "shell.run"])},
        optional={
            "args": st.dictionaries(st.sampled_from(["path", "n", "host", "deep"]), values),
            "caller": st.fixed_dictionaries({}, optional={"agent": scalars, "session": scalars}),
            "input": values,
        },
    ),
    values,
)


def build(raw_rules: list[dict[str, Any]], default: str) -> DecisionPoint:
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw_rules)]
    data = {"policy": "p", "version": "1", "default": default, "rules": numbered}
    return DecisionPoint(Pack.from_mapping(data), KEYRING)


def check_invariants(decision: Decision) -> None:
    assert decision.action.refuses == (decision.reason_code is not None)
    code = decision.reason_code
    assert decision.reason_codes_version == (code.since if code is not None else 1)
    decisive = [s for s in decision.why_trail if s.decisive]
    assert len(decisive) == 1
    assert decisive[0].rule == decision.matched_rule
    wire = decision.to_dict()
    again = Decision.from_dict(json.loads(json.dumps(wire)))
    assert again == decision
    assert canonical_json(again.to_dict()) == canonical_json(wire)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(rules, st.sampled_from(["allow", "deny"]), requests)
def test_random_packs_and_requests_never_raise(
    raw_rules: list[dict[str, Any]], default: str, request: Any
) -> None:
    decision = build(raw_rules, default).decide(request)
    check_invariants(decision)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(rules, requests)
def test_never_allow_when_a_rule_says_deny(raw_rules: list[dict[str, Any]], request: Any) -> None:
    """Adding a deny rule that matches everything must refuse whatever else the pack says."""
    dp = build([*raw_rules, {"effect": "deny"}], "allow")
    decision = dp.decide(request)
    assert decision.action in (Action.DENY, Action.BLOCK)
    if decision.matched_rule == "@request":  # a malformed request is rejected before any rule
        assert decision.reason_code is ReasonCode.INPUT_REJECTED
    elif decision.reason_code is not ReasonCode.UNAVAILABLE:
        assert decision.reason_code is ReasonCode.POLICY_DENIED
    check_invariants(decision)


SEED = bytes(range(32))
TOKEN = mint_token(SEED, "k1", "coder", time.time() + 86_400)
stages = st.fixed_dictionaries(
    {},
    optional={
        "attestation": st.just(
            {"trusted_keys": {"k1": base64.b64encode(public_key_from_seed(SEED)).decode()}}
        ),
        "capabilities": st.dictionaries(
            st.sampled_from(["coder", "", "é"]),
            st.lists(st.sampled_from(["fs.*", "fs.read", "shell.run", "*"]), max_size=2),
            max_size=2,
        ),
        "tools": st.dictionaries(
            st.sampled_from(["fs.write", "fs.read"]),
            st.just({"args": {"type": "object", "required": ["path"]}}),
            max_size=2,
        ),
        "input_filters": st.lists(
            st.fixed_dictionaries(
                {
                    "field": st.sampled_from(["input", "args.path"]),
                    "regex": st.sampled_from(["a", "(?i)ignore", "^/etc"]),
                }
            ),
            max_size=2,
        ),
    },
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(stages, rules, st.sampled_from(["allow", "deny"]), requests)
def test_packs_with_stages_round_trip(
    sections: dict[str, Any], raw_rules: list[dict[str, Any]], default: str, request: Any
) -> None:
    if isinstance(request, dict) and isinstance(request.get("caller"), dict):
        request["caller"]["token"] = TOKEN  # a valid token for "coder", refused for any other
    filters = [{"id": f"f{i}", **f} for i, f in enumerate(sections.pop("input_filters", []))]
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw_rules)]
    data = {"policy": "p", "version": "1", "default": default, "rules": numbered, **sections}
    if filters:
        data["input_filters"] = filters
    decision = DecisionPoint(Pack.from_mapping(data), KEYRING).decide(request)
    check_invariants(decision)


@settings(max_examples=100)
@given(st.text(max_size=60))
def test_random_lines_never_raise(line: str) -> None:
    decision = build([], "allow").decide_line(line, line_number=1)
    check_invariants(decision)


# -- a reference evaluator of docs/design/policy.md, written plainly
# -------------------------------------

T, F, U = "true", "false", "unknown"
SEVERITY = {"audit": 0, "allow": 1, "deny": 2, "block": 3}


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array"}.get(type(value), "object")


def ip_forms(value: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address, and the IPv4 host inside an IPv4-mapped or NAT64 (64:ff9b::/96) address."""
    addr = ipaddress.ip_address(value)
    forms: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [addr]
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            forms.append(addr.ipv4_mapped)
        elif addr in ipaddress.ip_network("64:ff9b::/96"):
            forms.append(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    return forms


def string_test(op: str, pattern: str, value: str) -> bool:
    if op == "glob":
        return reference_glob(pattern, value)
    if op == "regex":
        return re2.search(pattern, value) is not None
    if op == "prefix":
        return value.startswith(pattern)
    forms = ip_forms(value)
    net = ipaddress.ip_network(pattern, strict=False)
    return any(form.version == net.version and form in net for form in forms)


def ref_condition(cond: Any, value: Any) -> str:
    """Three-valued: the condition on a present value."""
    if not isinstance(cond, dict):
        if kind(value) != kind(cond):
            return U
        return T if value == cond else F
    op = next(k for k in cond if k != "class")
    arg = cond[op]
    if op == "not":
        inner = ref_condition(arg, value)
        return {T: F, F: T, U: U}[inner]
    if op == "in":
        if kind(value) not in {kind(item) for item in arg}:
            return U
        return T if any(kind(i) == kind(value) and i == value for i in arg) else F
    if op == "range":
        if kind(value) != "number":
            return U
        low, high = arg.get("min"), arg.get("max")
        return F if (low is not None and value < low) or (high is not None and value > high) else T
    if not isinstance(value, str):
        return U
    try:
        items = arg if isinstance(arg, list) else [arg]
        return T if any(string_test(op, item, value) for item in items) else F
    except ValueError:  # not an IP address
        return U


def lookup(request: dict[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = request
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def ref_branch(request: dict[str, Any], conds: dict[str, Any]) -> str:
    states = []
    for path, cond in conds.items():
        present, value = lookup(request, path)
        states.append(ref_condition(cond, value) if present else U)
    return F if F in states else U if U in states else T


def ref_rule(request: dict[str, Any], when: Any) -> str:
    states = [ref_branch(request, b) for b in (when if isinstance(when, list) else [when])]
    return T if T in states else U if U in states else F


def reference(
    rules: list[dict[str, Any]], default: str, request: dict[str, Any]
) -> tuple[str, str]:
    """``(action, matched_rule)`` as docs/design/policy.md defines them."""
    matched = []
    for index, rule in enumerate(rules):
        state = ref_rule(request, rule["when"])
        if state == T or (state == U and SEVERITY[rule["effect"]] >= 2):
            matched.append((index, rule["effect"]))
    granting = [(SEVERITY[e], -i, e) for i, e in matched if e != "audit"]
    if granting and max(granting)[0] >= 2:
        _, minus_index, effect = max(granting)
        return effect, f"r{-minus_index}"
    if not granting and default == "deny":
        return "deny", "@default"
    audits = [i for i, e in matched if e == "audit"]
    if audits:
        return "audit", f"r{audits[0]}"
    if granting:
        return "allow", f"r{-max(granting)[1]}"
    return "allow", "@default"


# -- random packs with conditional rules, and requests that exercise them -----------------------

TEXTS = [
    "/etc/passwd",
    "/etc/x\n/shadow",
    "/etc/shadow",
    "/workspace/src/a.py",
    "/workspace/.env",
    "a\nb/.env",
    "/home/u/.ssh/id_rsa.pub",
    "card 4111111111111111",
    "4111",
    "::ffff:10.0.0.1",
    "64:ff9b::a00:1",
    "10.0.0.1",
    "192.168.1.1",
    "::1",
    "fs.write",
    "x]y",
    "Ω٣",
    ".*",
    "",
]
texts = st.sampled_from(TEXTS) | st.text(max_size=6)
leaves = st.one_of(
    texts,
    st.integers(-3, 3),
    st.floats(-3, 3),
    st.booleans(),
    st.none(),
    st.lists(texts, max_size=2),
)
GLOBS = ["/etc/**", "/etc/**/shadow", "**/.env", "**/id_rsa*", "/workspace/*/*.py", "*", "**", "?"]
REGEXES = [
    "[[:digit:]]{16}",
    "[a[:digit:]]",
    "[[:alpha:]]+\\s",
    r"\pN",
    r"\p{Greek}",
    r"\Q.*\E",
    "x{,2}",
    "(?i)ETC",
    "^/etc",
    "shadow$",
    "[0-9]+",
    "a|b",
    "]",
    "passwd",
]
PREFIXES = ["/", "/etc/", "/workspace/", "fs.", "card"]
CIDRS = ["10.0.0.0/8", "192.168.0.0/16", "::1/128", "::ffff:0:0/96"]


def one_or_list(items: list[str]) -> Any:
    return st.sampled_from(items) | st.lists(st.sampled_from(items), min_size=1, max_size=3)


base_conditions = st.one_of(
    st.sampled_from(TEXTS) | st.integers(-2, 2) | st.booleans() | st.none(),
    st.builds(lambda g: {"glob": g}, one_or_list(GLOBS)),
    st.builds(lambda r: {"regex": r}, one_or_list(REGEXES)),
    st.builds(lambda p: {"prefix": p}, one_or_list(PREFIXES)),
    st.builds(lambda c: {"cidr": c}, one_or_list(CIDRS)),
    st.builds(
        lambda v: {"in": v},
        st.lists(st.sampled_from(TEXTS) | st.integers(-2, 2), min_size=1, max_size=3),
    ),
    st.builds(lambda lo: {"range": {"min": lo, "max": lo + 2}}, st.integers(-3, 3)),
)
ref_conditions = st.recursive(
    base_conditions, lambda c: st.builds(lambda i: {"not": i}, c), max_leaves=3
)
PATHS = ["tool", "args.path", "args.content", "args.content", "args.host", "args.n", "input"]


def _loads(when: dict[str, Any]) -> bool:
    """False for a bare ``tool:`` string with ``*`` or ``?``: a pack refuses it at load (it would
    be compared literally and name no tool), so such a rule is no decision to compare."""
    tool = when.get("tool")
    return not (isinstance(tool, str) and {"*", "?"} & set(tool))


ref_when = st.dictionaries(st.sampled_from(PATHS), ref_conditions, min_size=1, max_size=3).filter(
    _loads
)
ref_rules = st.lists(
    st.fixed_dictionaries(
        {
            "effect": st.sampled_from(["allow", "audit", "deny", "block"]),
            "when": ref_when | st.lists(ref_when, min_size=1, max_size=2),
        }
    ),
    min_size=1,
    max_size=6,
)
# Mostly strings on the fields the rules test (so rules really match), sometimes anything.
field_values = st.one_of(st.sampled_from(TEXTS), st.sampled_from(TEXTS), leaves)
ref_requests = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["fs.write", "fs.read", "net.fetch"]),
        "args": st.fixed_dictionaries(
            {"path": field_values, "content": field_values},
            optional={"host": field_values, "n": leaves},
        ),
    },
    optional={"caller": st.fixed_dictionaries({}, optional={"agent": leaves}), "input": leaves},
)

CARD_RULE = {"effect": "deny", "when": {"args.content": {"regex": "[[:digit:]]{16}"}}}
CARD_REQUEST = {"tool": "fs.write", "args": {"content": "card 4111111111111111"}}
SHADOW_RULE = {"effect": "deny", "when": {"args.path": {"glob": "/etc/**/shadow"}}}
MAPPED_RULE = {"effect": "deny", "when": {"args.host": {"cidr": "10.0.0.0/8"}}}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ref_rules, st.sampled_from(["allow", "deny"]), ref_requests)
@example([CARD_RULE], "allow", CARD_REQUEST)
@example([SHADOW_RULE], "allow", {"tool": "fs.write", "args": {"path": "/etc/x\n/shadow"}})
@example([MAPPED_RULE], "allow", {"tool": "net.fetch", "args": {"host": "::ffff:10.0.0.1"}})
def test_decisions_agree_with_the_reference_evaluator(
    raw_rules: list[dict[str, Any]], default: str, request: dict[str, Any]
) -> None:
    """Whenever the reference says a deny/block rule matches (or is unknown), the decision is a
    refusal; and in fact the engine's action and decisive rule are the reference's."""
    numbered = [{"id": f"r{i}", **rule} for i, rule in enumerate(raw_rules)]
    data = {"policy": "p", "version": "1", "default": default, "rules": numbered}
    decision = DecisionPoint(Pack.from_mapping(data), KEYRING, deadline_ms=60_000).decide(request)
    action, rule = reference(raw_rules, default, request)
    if action in ("deny", "block"):
        assert decision.action in (Action.DENY, Action.BLOCK), (action, rule, decision.why_trail)
    assert decision.reason_code is not ReasonCode.UNAVAILABLE, decision.why_trail
    assert (decision.action.value, decision.matched_rule) == (action, rule)
    check_invariants(decision)
