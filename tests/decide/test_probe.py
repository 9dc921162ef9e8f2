"""The ``**`` walk's speed twin (``decide/_probe.py``) answers exactly as the search it memoises.

``WalkProbe.any`` (remembered strings, one needle screen, then the search) must say what the
engine's own test says: some form of some string on which ``walk_any`` holds. It imports the
internal module because that is the speed twin it pins (CONTRIBUTING.md, Speed twins); the
decisions themselves are checked through the public surface below.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.decide import DecisionPoint, Pack, load_pack
from refusalkit.decide._compile import ToolRule, make_plan
from refusalkit.decide._conditions import FALSE, needles
from refusalkit.decide._fields import walk_strings
from refusalkit.decide._probe import WalkProbe, raw_strings, string_forms
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring

# Fragments of credential names and directories, in odd cases and spellings, with characters
# whose case folding differs between ``str.lower`` and RE2 (long s, Kelvin sign, dotted I).
_FRAGMENTS = st.sampled_from(
    [".env", ".ENV", "id_rsa", "ID_ED25519", ".ssh", ".AWS", "credentials", ".json", ".p12",
     ".pfx", ".py", "config", "gcloud", "etc", "/", "//", "/./", "/../", "..", "\\", "a", "\u017f",
     "\u212a", "\u0130", "kube", "history", ".pem", " ", "\n", "x", "tfstate", ".git"]
)  # fmt: skip
_TEXTS = st.lists(_FRAGMENTS, max_size=8).map("".join)


@functools.cache
def _walk_rule(pack_name: str, rule_id: str, tool: str = "fs.read") -> ToolRule:
    pack = load_pack(example_path(pack_name))
    plan = pack.compiled.rules.for_tool(tool)
    return next(rule for rule in plan.rules if rule.rule.id == rule_id)


def _reference(rule: ToolRule, texts: list[str]) -> bool:
    """Some branch's own check is not false on some form of some string (no memo, no screen)."""
    walks = rule.walks or ()
    after = walks[0].each or ()
    forms = [form for text in texts for form in string_forms(text, after)]
    return any(spec.cond.check(form) != FALSE for spec in walks for form in forms)


@pytest.mark.parametrize(
    ("pack_name", "rule_id"),
    [("agent-tools.yaml", "sensitive_path"), ("mcp-filesystem.yaml", "sensitive_path")],
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TEXTS, max_size=3), repeat=st.booleans())
def test_the_probe_agrees_with_the_branches_own_checks(
    pack_name: str, rule_id: str, texts: list[str], repeat: bool
) -> None:
    rule = _walk_rule(pack_name, rule_id)
    probe = rule.probe
    assert isinstance(probe, WalkProbe)
    expected = _reference(rule, texts)
    assert probe.any(texts) == expected
    if repeat:  # remembered answers are the same answers
        assert probe.any(texts) == expected


# JSON values the walk reads: nested objects and lists, non-strings, and strings past the
# memo's length limit (searched each time, never remembered).
_LONG = st.builds(lambda text, n: text * n, _TEXTS, st.integers(min_value=1, max_value=700))
_VALUES = st.recursive(
    st.none() | st.integers() | st.booleans() | _TEXTS | _LONG,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@pytest.mark.parametrize(
    ("pack_name", "rule_id"),
    [("agent-tools.yaml", "sensitive_path"), ("mcp-filesystem.yaml", "sensitive_path")],
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(st.text(max_size=3), _VALUES, max_size=4), repeat=st.booleans())
def test_holds_on_arguments_agrees_with_the_reference_walk(
    pack_name: str, rule_id: str, args: dict[str, Any], repeat: bool
) -> None:
    """``holds`` reads flat arguments in one loop and nested ones by the walk: either way it
    answers as the branches' own checks on every string ``walk_strings`` finds."""
    rule = _walk_rule(pack_name, rule_id)
    probe = rule.probe
    assert isinstance(probe, WalkProbe)
    expected = _reference(rule, [text for _, text in walk_strings(args)])
    assert probe.holds(args) == expected
    if repeat:
        assert probe.holds(args) == expected


# Texts with the join's separator, the separators of other spellings, and characters whose
# lower case is longer (U+0130) or depends on the letters around it (final sigma), empty
# strings and long ones.
_JOINED = st.lists(
    st.lists(
        _FRAGMENTS | st.sampled_from(["\u03a3", "A", "\u0130/", "/\u017f", ""]), max_size=6
    ).map("".join)
    | _LONG,
    min_size=2,
    max_size=4,
)


@pytest.mark.parametrize(
    ("rule_id", "tool"), [("sensitive_path", "fs.read"), ("code_paths", "fs.write")]
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=_JOINED)
def test_one_screen_over_the_joined_strings_is_the_screen_of_each(
    rule_id: str, tool: str, texts: list[str]
) -> None:
    """Fresh strings are screened in one search over their ``/`` join: no needle holds a
    ``/``, so the join finds a needle exactly where some string holds one (the bundled
    rules with a screen; the MCP starter pack's list has patterns without needles)."""
    rule = _walk_rule("agent-tools.yaml", rule_id, tool)
    assert rule.probe is not None
    screen = rule.probe._screen
    assert screen is not None
    assert screen("/".join(texts)) == any(screen(text) for text in texts)


def test_the_bundled_rule_has_a_needle_screen() -> None:
    """Otherwise every string pays the full search (the benchmark's ``args**`` column)."""
    rule = _walk_rule("agent-tools.yaml", "sensitive_path")
    assert rule.probe is not None
    assert rule.probe._screen is not None


def test_needles_of_an_alternation_after_a_literal_are_whole() -> None:
    """``\\.p(?:12|fx)``: every match holds ``.p12`` or ``.pfx``, not merely ``.p`` (which
    every ``.py`` file holds)."""
    assert needles("regex", [r"(?i)(?:^|/)[^/]+\.p(?:12|fx)$"]) == {".p12", ".pfx"}
    assert needles("under", ["**/.config/gcloud"]) == {".config"}
    assert needles("glob", ["**"]) is None  # nothing is required: no screen


@given(value=st.recursive(st.none() | st.integers() | _TEXTS, lambda inner: st.lists(inner)
       | st.dictionaries(st.text(max_size=3), inner), max_leaves=12))  # fmt: skip
def test_raw_strings_are_the_walks_strings(value: Any) -> None:
    assert raw_strings(value) == [text for _, text in walk_strings(value)]


def _credential_step_matched(dp: DecisionPoint, request: dict[str, Any]) -> bool:
    decision = dp.decide(request)
    step = next(s for s in decision.why_trail if s.rule == "sensitive_path")
    return step.matched


_STAGES = ("attestation", "capabilities", "tool_schemas")
ROOMY_MS = 10_000.0  # a loaded machine must not turn a compared decision into a deadline overrun


@functools.cache
def _bundled_without_stages() -> DecisionPoint:
    data = load_pack(example_path("agent-tools.yaml")).data
    pack = Pack.from_mapping({k: v for k, v in data.items() if k not in _STAGES})
    return DecisionPoint(pack, Keyring.generate(), deadline_ms=ROOMY_MS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=_TEXTS, other=_TEXTS)
def test_decisions_of_the_bundled_pack_follow_the_reference(path: str, other: str) -> None:
    """Through the public surface: the credential rule matches exactly where the reference
    says one of its branches holds (or is unknown) on some string."""
    dp = _bundled_without_stages()
    rule = _walk_rule("agent-tools.yaml", "sensitive_path")
    request = {"tool": "fs.read", "args": {"path": path, "note": other}}
    assert _credential_step_matched(dp, request) == _reference(rule, [path, other])


_TOOLS = ("fs.write", "fs.move", "git.diff", "shell.run", "plugin.x")
_KEYS = st.sampled_from(["path", "destination", "content", "command", "url", "x"])
_PATHS = st.builds(str.__add__, st.sampled_from(["/workspace/", "/home/dev/", "", "a/"]), _TEXTS)


def _reference_point(data: dict[str, Any], keyring: Keyring) -> DecisionPoint:
    """The pack's engine with every ``**`` rule evaluated condition by condition
    (``_check_walk``, the plain evaluator of docs/design/policy.md): no probe, no one walk
    of the rule (``_walk_hit``), no reuse of what the probe found (``_probed_hit``)."""
    dp = DecisionPoint(Pack.from_mapping(data), keyring, deadline_ms=ROOMY_MS)
    rules = dp.pack.compiled.rules
    for tool in _TOOLS:
        plain = tuple(
            dataclasses.replace(rule, walks=None, walk_any=None, probe=None)
            for rule in rules.for_tool(tool).rules
        )
        rules._cache[tool] = make_plan(plain)
    return dp


@functools.cache
def _fast_and_reference() -> tuple[DecisionPoint, DecisionPoint]:
    data = load_pack(example_path("agent-tools.yaml")).data
    data = {k: v for k, v in data.items() if k not in _STAGES}
    keyring = Keyring.generate()
    fast = DecisionPoint(Pack.from_mapping(data), keyring, deadline_ms=ROOMY_MS)
    return fast, _reference_point(data, keyring)


def _ruling(dp: DecisionPoint, request: dict[str, Any]) -> tuple[Any, ...]:
    decision = dp.decide(request)
    return decision.action, decision.reason_code, decision.matched_rule, decision.why_trail


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tool=st.sampled_from(_TOOLS),
    args=st.dictionaries(_KEYS, _VALUES | _PATHS, max_size=4),
    repeat=st.booleans(),
)
def test_the_fast_walk_gives_the_reference_trail(
    tool: str, args: dict[str, Any], repeat: bool
) -> None:
    """The probe, the one walk of a ``**`` rule and the reuse of the strings the probe
    cleared decide as the plain evaluator does, step for step: which rule, which string
    (its path and redaction token), which alternative, and the strings counted. A repeat
    reads the probe's memory (cleared strings are then known before the walk)."""
    fast, reference = _fast_and_reference()
    request = {"tool": tool, "args": args}
    expected = _ruling(reference, request)
    assert _ruling(fast, request) == expected
    if repeat:
        assert _ruling(fast, request) == expected
