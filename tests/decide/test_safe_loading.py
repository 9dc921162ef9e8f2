"""Safe loading (docs/policy.md, Safe loading): YAML 1.2 meanings, no aliases, bounded nesting,
schema regexes on RE2, and schema failures that name the schema, not the request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit._internal.source import MAX_DEPTH, core_scalar
from refusalkit.decide import DecisionPoint, Pack, load_pack
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring

HEAD = "policy: p\nversion: v1\n"


def write(tmp_path: Path, text: str, name: str = "pack.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- YAML 1.1 / 1.2 --------------------------------------------------------------------------------

SANCTIONS = (
    HEAD
    + """default: allow
rules:
  - id: sanctioned
    effect: deny
    when: {args.country: {in: [KP, IR, SY, NO]}}
"""
)


def test_an_unquoted_no_is_refused_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        load_pack(write(tmp_path, SANCTIONS))
    error = caught.value
    assert error.line == 7
    assert "'NO' is ambiguous" in str(error)
    assert 'Quote it ("NO")' in (error.hint or "")


def test_the_quoted_pack_means_what_it_says(tmp_path: Path) -> None:
    pack = load_pack(write(tmp_path, SANCTIONS.replace("NO]", '"NO"]')))
    dp = DecisionPoint(pack, Keyring.generate())
    assert dp.decide({"tool": "t", "args": {"country": "NO"}}).matched_rule == "sanctioned"


@pytest.mark.parametrize(
    "scalar", ["NO", "no", "on", "Off", "yes", "Yes", "0777", "1:20", "1e3", "1_000",
               "0b101", "0o17"],
)  # fmt: skip
def test_scalars_that_yaml_1_1_reads_differently_are_refused(tmp_path: Path, scalar: str) -> None:
    text = (
        HEAD + f"description: x\nrules:\n  - {{id: r, effect: deny, when: {{args.v: {scalar}}}}}\n"
    )
    with pytest.raises(PolicyError, match="ambiguous") as caught:
        load_pack(write(tmp_path, text))
    assert caught.value.line == 5


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12), ("-3", -3), ("1.5", 1.5), ("true", True), ("null", None), ("~", None),
     ("0x1F", 31), ("hello", "hello"), ("1.0e+3", 1000.0)],
)  # fmt: skip
def test_core_schema_values(text: str, value: Any) -> None:
    assert core_scalar(text) == value
    assert type(core_scalar(text)) is type(value)


def test_json_numbers_are_never_ambiguous(tmp_path: Path) -> None:
    data = {"policy": "p", "version": "v1", "rules": [
        {"id": "big", "effect": "deny", "when": {"args.n": {"range": {"min": 1e3}}}}]}  # fmt: skip
    pack = load_pack(write(tmp_path, json.dumps(data).replace("1000.0", "1e3"), "pack.json"))
    assert pack.data["rules"][0]["when"]["args.n"]["range"]["min"] == 1000.0


# -- aliases and depth ----------------------------------------------------------------------------

BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    assert len(BOMB) < 1024
    with pytest.raises(PolicyError, match=r"aliases are not supported \(\*a\)") as caught:
        load_pack(write(tmp_path, HEAD + BOMB + "rules: []\n"))
    assert caught.value.line == 4


def deep_not(depth: int) -> str:
    return "{not: " * depth + "x" + "}" * depth


def test_deep_nesting_in_a_file_is_a_clear_error(tmp_path: Path) -> None:
    text = HEAD + f"rules:\n  - {{id: r, effect: deny, when: {{args.v: {deep_not(150)}}}}}\n"
    with pytest.raises(PolicyError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_pack(write(tmp_path, text))


def test_deep_nesting_in_data_is_a_clear_error() -> None:
    cond: Any = "x"
    for _ in range(150):
        cond = {"not": cond}
    data = {"policy": "p", "version": "v1", "rules": [{"id": "r", "effect": "deny",
            "when": {"args.v": cond}}]}  # fmt: skip
    with pytest.raises(PolicyError, match="nested deeper"):
        Pack.from_mapping(data)


def test_policy_check_on_a_deep_pack_prints_the_error_not_a_traceback(tmp_path: Path) -> None:
    text = HEAD + f"rules:\n  - {{id: r, effect: deny, when: {{args.v: {deep_not(150)}}}}}\n"
    result = CliRunner().invoke(refusalkit.cli.app, ["policy", "check", str(write(tmp_path, text))])
    assert result.exit_code != 0
    assert "nested deeper" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_the_deepest_allowed_nesting_still_loads() -> None:
    cond: Any = "x"
    for _ in range((MAX_DEPTH - 6) // 1):  # rules[0].when.field + the pack itself
        cond = {"not": cond}
    data = {"policy": "p", "version": "v1", "rules": [{"id": "r", "effect": "deny",
            "when": {"args.v": cond}}]}  # fmt: skip
    Pack.from_mapping(data)


# -- tool schemas on RE2 ---------------------------------------------------------------------


def tool_pack(schema: dict[str, Any]) -> dict[str, Any]:
    return {"policy": "p", "version": "v1", "default": "allow", "tools": {"t": {"args": schema}},
            "rules": []}  # fmt: skip


def test_a_backtracking_schema_pattern_runs_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}}}
    dp = DecisionPoint(Pack.from_mapping(tool_pack(schema)), Keyring.generate(), deadline_ms=5000)
    d = dp.decide({"tool": "t", "args": {"v": "a" * 28 + "!"}})  # ~20 s on a backtracking engine
    assert d.matched_rule == "@schema"
    assert dp.decide({"tool": "t", "args": {"v": "aaa"}}).action.value == "allow"


def test_pattern_properties_and_additional_properties_run_on_re2() -> None:
    schema = {"type": "object", "patternProperties": {"^(x+x+)+y$": {"type": "integer"}},
              "additionalProperties": False}  # fmt: skip
    dp = DecisionPoint(Pack.from_mapping(tool_pack(schema)), Keyring.generate(), deadline_ms=5000)
    assert dp.decide({"tool": "t", "args": {"xxy": 1}}).action.value == "allow"
    assert dp.decide({"tool": "t", "args": {"xxy": "s"}}).matched_rule == "@schema"
    assert dp.decide({"tool": "t", "args": {"x" * 30: 1}}).matched_rule == "@schema"


@pytest.mark.parametrize(
    "schema",
    [{"pattern": "(?<=a)b"}, {"properties": {"v": {"pattern": "(a)\\1"}}},
     {"patternProperties": {"(?=x)": {}}}],
)  # fmt: skip
def test_a_pattern_re2_cannot_read_is_a_load_error(schema: dict[str, Any]) -> None:
    with pytest.raises(PolicyError, match="not one RE2 can run") as caught:
        Pack.from_mapping(tool_pack(schema))
    assert (caught.value.key or "").startswith("tools.t.args")


def test_unevaluated_properties_with_patterns_is_refused() -> None:
    schema = {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(PolicyError, match="unevaluatedProperties"):
        Pack.from_mapping(tool_pack(schema))


# -- schema failures name the schema ------------------------------------------------------------


def test_schema_failures_never_name_request_keys() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}},
              "additionalProperties": {"type": "integer"}}  # fmt: skip
    dp = DecisionPoint(Pack.from_mapping(tool_pack(schema)), Keyring.generate())
    secret = "X-Api-Key: sk_live_51HfQ2mZ9xLr4TtY1vW8bN3cK6"
    d = dp.decide({"tool": "t", "args": {secret: "not a number"}})
    step = d.why_trail[-1]
    assert (step.rule, step.field) == ("@schema", "args")
    assert step.detail == "args violates the schema keyword 'type' at #/additionalProperties/type"
    assert "sk_live" not in json.dumps(d.to_dict())


def test_schema_failures_name_the_schema_field() -> None:
    schema = {"type": "object", "properties": {"paths": {"type": "array",
              "items": {"type": "string"}}}}  # fmt: skip
    dp = DecisionPoint(Pack.from_mapping(tool_pack(schema)), Keyring.generate())
    step = dp.decide({"tool": "t", "args": {"paths": ["a", 3]}}).why_trail[-1]
    assert step.field == "args.paths[*]"
    assert step.detail is not None
    assert step.detail.endswith("at #/properties/paths/items/type")


MARK = "SECRETMARK"
_LEAK_PACK = {
    "policy": "p",
    "version": "v1",
    "default": "deny",
    "field_classes": {"f": {"kind": "path"}, "s": {"kind": "shell"}, "u": {"kind": "url"}},
    "tools": {
        "t": {
            "args": {
                "type": "object",
                "properties": {"path": {"type": "string", "maxLength": 40}},
                "patternProperties": {"^x": {"type": "integer"}},
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            }
        }
    },
    "rules": [
        {"id": "p", "effect": "deny",
         "when": {"tool": "t", "args.path": {"glob": "/e/**", "class": "f"}}},
        {"id": "l", "effect": "allow",
         "when": {"tool": "t", "args.list[*]": {"prefix": "/w/", "class": "f"}}},
        {"id": "c", "effect": "allow",
         "when": {"tool": "t", "args.cmd.argv[0]": {"in": ["ls"], "class": "s"}}},
        {"id": "u", "effect": "deny",
         "when": {"tool": "t", "args.url.host": {"cidr": "10.0.0.0/8", "class": "u"}}},
    ],
}  # fmt: skip
_LEAK_DP = DecisionPoint(Pack.from_mapping(_LEAK_PACK), Keyring.generate(), deadline_ms=60_000)
_SECRET_TEXT = st.text(max_size=6).map(lambda t: f"{t}{MARK}{t}")
_VALUES = st.one_of(_SECRET_TEXT, st.integers(), st.lists(_SECRET_TEXT, max_size=3))


@given(
    st.dictionaries(st.sampled_from(["path", "list", "cmd", "url", "x1"]) | _SECRET_TEXT, _VALUES)
)
def test_no_trail_carries_request_keys_or_values(args: dict[str, Any]) -> None:
    decision = _LEAK_DP.decide({"tool": "t", "args": args})
    assert MARK not in json.dumps(decision.to_dict(), ensure_ascii=False)


# -- tagged scalars their tag cannot read ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "key"),
    [("version: !!int x", "version"), ("version: !!bool maybe", "version"),
     ("version: !!float y", "version"), ("!foo k: 1", "k"), ("!!binary a: 1", "a"),
     ("!!int x: 1", "x")],
)  # fmt: skip
def test_a_value_its_tag_cannot_read_is_an_error_at_its_line(
    tmp_path: Path, line: str, key: str
) -> None:
    text = "policy: p\nrules: []\n" + line + "\n"
    with pytest.raises(PolicyError, match="is not a value of its tag") as caught:
        load_pack(write(tmp_path, text))
    assert (caught.value.line, caught.value.key) == (3, key)
    result = CliRunner().invoke(refusalkit.cli.app, ["policy", "check", str(write(tmp_path, text))])
    assert result.exit_code != 0
    assert "Traceback" not in result.stderr + result.stdout


# -- tagged maps and lists ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["sets: !!set {a, b}", "sets: !!omap [{a: 1}]", "sets: !!python/object:os.system {}",
     "sets: !!python/object/apply:os.system [echo]", "sets: !!str {}", "sets: !!seq {}",
     "sets: !foo []"],
)  # fmt: skip
def test_a_map_or_list_tagged_as_another_type_is_refused_at_its_line(
    tmp_path: Path, line: str
) -> None:
    """The engine reads a tagged map or list as a plain one, a reader that honours the tag (or
    constructs it) as a set, pairs or an object: two readings of one pack, so it is refused."""
    text = "policy: p\nrules: []\n" + line + "\n"
    with pytest.raises(PolicyError, match=r"tagged .* is not JSON") as caught:
        load_pack(write(tmp_path, text))
    assert (caught.value.line, caught.value.key) == (3, "sets")


def test_a_map_or_list_tagged_as_itself_is_read(tmp_path: Path) -> None:
    text = "policy: p\nversion: '1'\nrules: !!seq []\nsets: !!map {}\nfield_classes: ! {}\n"
    assert load_pack(write(tmp_path, text)).data["rules"] == []


# -- names end where the text ends --------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "key"),
    [({"policy": "p\n"}, "policy"),
     ({"rules": [{"id": "a\n", "effect": "deny", "when": {"tool": "x"}}]}, "rules[0].id"),
     ({"rules": [{"id": "a", "effect": "require-approval", "ttl": "15m\n", "when": {"tool": "x"}}]},
      "rules[0].ttl"),
     ({"rules": [{"id": "a", "effect": "deny", "when": {"args.x\n": "1"}}]}, "rules[0].when"),
     ({"sets": {"s\n": ["a"]}}, "sets")],
)  # fmt: skip
def test_a_name_with_a_trailing_newline_is_refused(change: dict[str, Any], key: str) -> None:
    """The schema's patterns are ECMA-262 regexes (JSON Schema 2020-12 validation §6.3.3), whose
    ``$`` is the end of the text; Python's also matches before a final newline, so ``a`` and
    ``a\\n`` were two ids that print alike, accepted here and refused by other validators."""
    data = {"policy": "p", "version": "1", "rules": [], **change}
    with pytest.raises(PolicyError) as caught:
        Pack.from_mapping(data)
    assert (caught.value.key or "").startswith(key)
