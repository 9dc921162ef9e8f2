"""``policy lint`` (docs/policy.md, Lint): golden output, exit codes, and each check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit._internal.source import Lines
from refusalkit.decide import LintCode, Pack, load_pack
from refusalkit.decide._lint import lint_data
from refusalkit.errors import PolicyError
from refusalkit.examples import example_path

GOLDEN = Path(__file__).resolve().parent / "golden"
runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(refusalkit.cli.app, list(args))


def test_golden_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOLDEN)
    result = invoke("policy", "lint", "lint-pack.yaml")
    assert result.exit_code == 0
    assert result.stdout == (GOLDEN / "lint.txt").read_text(encoding="utf-8")


def test_strict_exits_1_on_warnings_and_0_without() -> None:
    assert invoke("policy", "lint", "--strict", str(GOLDEN / "lint-pack.yaml")).exit_code == 1
    result = invoke("policy", "lint", "--strict", str(example_path("agent-tools.yaml")))
    assert result.exit_code == 0
    assert result.stdout.endswith("agent-tools.yaml: no warnings\n")


def test_json_output() -> None:
    result = invoke("policy", "lint", "--json", str(GOLDEN / "lint-pack.yaml"))
    warnings = json.loads(result.stdout)
    assert {w["code"] for w in warnings} == {c.value for c in LintCode}
    assert warnings[0] == {
        "code": "broad-deny",
        "rule": "no_dotdot",
        "message": warnings[0]["message"],
        "hint": 'Add the tools it is meant for to its `when`, e.g. tool: {glob: "fs.*"}.',
        "file": str(GOLDEN / "lint-pack.yaml"),
        "line": 15,
        "key": "rules[0].when",
    }


def test_policy_check_runs_lint() -> None:
    result = invoke("policy", "check", str(GOLDEN / "lint-pack.yaml"))
    assert result.exit_code == 0
    assert "valid" in result.stdout
    assert "warning[broad-deny] rule 'no_dotdot'" in result.stderr
    summary = json.loads(invoke("policy", "check", "--json", str(GOLDEN / "lint-pack.yaml")).stdout)
    assert [w["code"] for w in summary["lint"]][:2] == ["broad-deny", "raw-path"]


def codes(rules: list[dict[str, Any]], **extra: Any) -> list[tuple[str, str]]:
    data = {"policy": "p", "version": "v1", "rules": rules, **extra}
    pack = Pack.from_mapping(data)
    return [(w.code.value, w.rule) for w in lint_data(pack.data, Lines("<memory>"))]


def rule(rid: str, effect: str, **when: Any) -> dict[str, Any]:
    return {"id": rid, "effect": effect, "when": when} if when else {"id": rid, "effect": effect}


def test_broad_deny_only_without_a_tool_condition() -> None:
    assert codes([rule("r", "deny", **{"args.path": "x"})]) == [("broad-deny", "r")]
    assert codes([rule("r", "block", **{"args.path": "x"})]) == [("broad-deny", "r")]
    assert codes([rule("r", "deny", tool="fs.read", **{"args.path": "x"})]) == []
    assert codes([rule("r", "allow", **{"args.path": "x"})]) == []  # unknown never allows
    assert codes([rule("r", "deny", **{"caller.agent": "x"})]) == []  # every call has a caller


def test_shadowing_follows_the_outcome_order() -> None:
    wide, narrow = {"tool": {"glob": "fs.*"}}, {"tool": "fs.write", "args.x": 1}
    assert codes([rule("a", "deny", **wide), rule("b", "deny", **narrow)]) == [("shadowed", "b")]
    assert codes([rule("a", "block", **wide), rule("b", "deny", **narrow)]) == [("shadowed", "b")]
    assert codes([rule("a", "allow", **wide), rule("b", "deny", **narrow)]) == []
    assert codes([rule("a", "allow", **wide), rule("b", "audit", **narrow)]) == []  # audit wins
    assert codes([rule("a", "deny", **narrow), rule("b", "deny", **wide)]) == []
    assert codes([rule("a", "allow"), rule("b", "allow", tool="x")]) == [("shadowed", "b")]


def test_kinds_silence_the_path_and_shell_checks() -> None:
    classes = {"p": {"kind": "path"}, "s": {"kind": "shell"}, "raw": {}}
    path = {"tool": "fs.read", "args.path": {"glob": "/w/**", "class": "p"}}
    shell = {"tool": "sh", "args.command": {"regex": "^ls", "class": "s"}}
    assert (
        codes([rule("a", "allow", **path), rule("b", "allow", **shell)], field_classes=classes)
        == []
    )
    raw = {"tool": "sh", "args.command": {"regex": "^ls$", "class": "raw"}}
    assert codes([rule("c", "allow", **raw)], field_classes=classes) == []  # anchored at both ends


@pytest.mark.parametrize(
    ("text", "key", "near"),
    [
        ("policy: p\nversion: v1\nrule: []\n", "rule", "rules"),
        ("policy: p\nversion: v1\nrules:\n  - {id: a, efect: deny}\n", "efect", "effect"),
        ("policy: p\nversion: v1\nrules: []\ndefualt: allow\n", "defualt", "default"),
        ("policy: p\nversion: v1\nrules: []\nfield_classes: {a: {knd: path}}\n", "knd", "kind"),
        ("policy: p\nversion: v1\nrules:\n  - {id: a, effect: deny, when: {x: {prefx: /}}}\n",
         "prefx", "prefix"),
        ("policy: p\nversion: v1\nrules: []\ninput_filters:\n  - {id: f, feild: input, regex: x}\n",
         "feild", "field"),
    ],
)  # fmt: skip
def test_unknown_keys_at_any_level_name_the_nearest_spelling(
    tmp_path: Path, text: str, key: str, near: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    result = invoke("policy", "check", str(path))
    assert result.exit_code == 2
    assert f"unknown key {key!r} (did you mean {near!r}?)" in result.stderr
    assert f"hint: Rename {key!r} to {near!r}." in result.stderr
    assert f"p.yaml:{text.count(chr(10), 0, text.index(key)) + 1}:" in result.stderr
    with pytest.raises(PolicyError, match="did you mean"):
        load_pack(path)


def test_a_condition_of_the_wrong_type_for_the_schema_never_allows() -> None:
    tools = {"t": {"args": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
    glob = {"tool": "t", "args.n": {"glob": "1*"}}
    in_range = {"tool": "t", "args.n": {"range": {"max": 9}}}
    assert codes([rule("a", "allow", **glob)], tools=tools) == [("never-matches", "a")]
    assert codes([rule("a", "allow", **in_range)], tools=tools) == []
    assert codes([rule("a", "deny", **glob)], tools=tools) == []  # unknown: the deny refuses


def test_args_walk_is_not_a_broad_deny() -> None:
    walk = rule("secrets", "deny", **{"args.**": {"glob": "**/.env"}})
    assert codes([walk]) == []


SHELL = {"argv": {"kind": "shell"}}


def shell_allow(words: Any | None) -> dict[str, Any]:
    when: dict[str, Any] = {"tool": "shell.run"}
    when["args.command.argv[0]"] = {"in": ["git"], "class": "argv"}
    if words is not None:
        when["args.command.argv[*]"] = {**words, "class": "argv"}
    return {"id": "ro", "effect": "allow", "when": when}


@pytest.mark.parametrize(
    "words",
    [None, {"regex": "^(-[A-Za-z0-9-]+|[^=]*)$"}, {"regex": "^[^=]*$"}, {"not": {"prefix": "/"}}],
)
def test_free_form_flags_are_warned(words: Any) -> None:
    assert codes([shell_allow(words)], field_classes=SHELL) == [("free-form-flags", "ro")]


def test_listed_flags_are_not_warned() -> None:
    words = {"regex": "^(--stat|-[nq]+|/workspace(/.*)?|[^/~=-][^=]*)$"}
    assert codes([shell_allow(words)], field_classes=SHELL) == []
    flags = {"flags": ["--stat", "--oneline"]}
    words = {"regex": ["^[^-=][^=]*$", {"set": "flags"}]}
    assert codes([shell_allow(words)], field_classes=SHELL, sets=flags) == []


def test_the_bundled_packs_lint_clean_and_the_old_shell_allowlist_did_not() -> None:
    for name in ("agent-tools.yaml", "mcp-filesystem.yaml"):
        pack = load_pack(example_path(name))
        assert lint_data(pack.data, Lines(name)) == []
    loose = {"regex": "^(-[A-Za-z0-9-]+|/workspace(/.*)?|[^/~=-][^=]*)$"}  # before flag lists
    assert codes([shell_allow(loose)], field_classes=SHELL) == [("free-form-flags", "ro")]
