"""``refusalkit decide --engine KIND:SOURCE``: the adapters behind the CLI, journaled like packs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.examples import example_path
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import Decision
from support.records import valid_record

Write = Callable[[str, str], Path]
runner = CliRunner()

CEDAR = """\
@id("no-etc")
forbid(principal, action, resource) when { context.path like "/etc/*" };
@id("permit-all")
permit(principal, action, resource);
"""
REQUESTS = (
    '{"tool": "fs.write", "args": {"content": "x"}, "caller": {"agent": "coder"}}\n'
    '{"tool": "fs.write", "args": {"path": "/workspace/a"}, "caller": {"agent": "coder"}}\n'
    "not json\n"
)


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    # a generous deadline: a busy test machine must not turn a verdict into `unavailable`
    result = runner.invoke(refusalkit.cli.app, [*args, "--deadline-ms", "10000"], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_decide_with_cedar_streams_records(write: Write, keyring_path: Path) -> None:
    policy = write("p.cedar", CEDAR)
    code, out, err = invoke(
        "decide", "--engine", f"cedar:{policy}", "--keyring", str(keyring_path), stdin=REQUESTS
    )
    assert code == 0, err
    records = [valid_record(json.loads(line)) for line in out.splitlines()]
    assert [(r["action"], r["matched_rule"]) for r in records] == [
        ("deny", "no-etc"), ("allow", "permit-all"), ("deny", "@request"),
    ]  # fmt: skip
    assert records[2]["reason_code"] == "input-rejected"
    assert {r["engine"]["name"] for r in records} == {"cedar"}


MALFORMED = (
    '{"tool": 3}\n[1, 2]\n{"tool": "a", "args": []}\nnot json\n'
    '{"tool": "fs.write", "args": {"path": "/w", "n": 9007199254740993}}\n'
)


def test_every_engine_rejects_a_malformed_request_as_the_native_engine_does(
    write: Write, keyring_path: Path
) -> None:
    """Not JSON, no string tool, args not an object, an integer beyond 2**53: deny +
    input-rejected by @request, whether the pack or Cedar, Rego or AGT decides
    (docs/design/decision.md, Reason codes)."""
    rego = write("p.rego", 'package p\nimport rego.v1\ndecision := {"allow": true}\n')
    agt = write(
        "agt.yaml",
        "name: p\nrules:\n  - name: w\n    condition: {field: path, operator: matches, "
        'value: "^/w"}\n    action: allow\n    priority: 1\ndefaults:\n  action: deny\n',
    )
    runs = {
        "native": ["--policy", str(example_path("agent-tools.yaml"))],
        "cedar": ["--engine", f"cedar:{write('p.cedar', CEDAR)}"],
        "rego": ["--engine", f"rego:{rego}", "--query", "data.p.decision"],
        "agt": ["--engine", f"agt:{agt}"],
    }
    for name, options in runs.items():
        code, out, err = invoke("decide", *options, "--keyring", str(keyring_path), stdin=MALFORMED)
        assert code == 0, (name, err)
        records = [valid_record(json.loads(line)) for line in out.splitlines()]
        seen = [(r["action"], r["reason_code"], r["matched_rule"], r["retryable"]) for r in records]
        assert seen == [("deny", "input-rejected", "@request", False)] * 5, name


def test_engine_decisions_are_journaled_like_native_ones(
    write: Write, keyring_path: Path, tmp_path: Path
) -> None:
    policy = write(
        "p.rego", 'package p\nimport rego.v1\ndecision := {"allow": input.tool == "a"}\n'
    )
    store = tmp_path / "journal.db"
    code, out, err = invoke(
        "decide", "--engine", f"rego:{policy}", "--query", "data.p.decision",
        "--keyring", str(keyring_path), "--journal", str(store),
        stdin='{"tool": "a"}\n{"tool": "b"}\n',
    )  # fmt: skip
    assert code == 0, err
    assert "journaled 2 decisions" in err
    with open_journal(store, Keyring.load(keyring_path)) as journal:
        assert journal.verify().size == 2
        assert journal.stats()["by_action"] == {"allow": 1, "deny": 1}
    assert [Decision.from_dict(json.loads(x)).engine.name for x in out.splitlines()] == ["rego"] * 2


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--engine", "z3:x"], "unknown engine kind 'z3'"),
        (["--engine", "cedar:"], "names no source"),
        (["--engine", "rego:x"], "needs --query"),
        (["--engine", "agt:x", "--query", "data.a.b"], "--query is for rego and opa"),
        (["--engine", "agt:x", "--cedar-schema", "s"], "are for cedar"),
        (["--query", "data.a.b"], "need --engine"),
        ([], "give either --policy PACK or --engine"),
        (["--engine", "cedar:/nonexistent.cedar"], "no such file"),
    ],
)
def test_usage_errors_are_one_line_with_a_hint(
    keyring_path: Path, args: list[str], problem: str
) -> None:
    code, out, err = invoke("decide", *args, "--keyring", str(keyring_path), stdin="")
    assert code == 2
    assert problem in err
    assert "hint:" in err
    assert "Traceback" not in err + out


def test_policy_and_engine_together_are_refused(write: Write, keyring_path: Path) -> None:
    code, _, err = invoke(
        "decide", "--policy", str(example_path("agent-tools.yaml")),
        "--engine", f"cedar:{write('p.cedar', CEDAR)}", "--keyring", str(keyring_path), stdin="",
    )  # fmt: skip
    assert code == 2
    assert "give either --policy PACK or --engine" in err


def test_a_bad_mapping_names_file_and_line(write: Write, keyring_path: Path) -> None:
    mapping = write("m.yaml", "input: args\nclasses:\n  args.path: 3\n")
    code, _, err = invoke(
        "decide", "--engine", f"cedar:{write('p.cedar', CEDAR)}", "--mapping", str(mapping),
        "--keyring", str(keyring_path), stdin="",
    )  # fmt: skip
    assert code == 2
    assert f"{mapping}:3: a field class must be a non-empty string" in err


def test_decide_with_a_cedar_schema_honours_its_action_groups(
    write: Write, keyring_path: Path
) -> None:
    """`--cedar-schema`: `fs.write in Action::"writes"` comes from the schema, so a forbid on the
    group denies, as Cedar does."""
    policy = write(
        "g.cedar",
        '@id("no-writes")\nforbid(principal, action in Action::"writes", resource);\n'
        '@id("all")\npermit(principal, action, resource);\n',
    )
    schema = write(
        "g.cedarschema",
        'entity Agent; entity Tool; action "writes";\n'
        'action "fs.write" in ["writes"] appliesTo { principal: [Agent], resource: [Tool] };\n'
        'action "fs.read" appliesTo { principal: [Agent], resource: [Tool] };\n',
    )
    lines = "".join(
        json.dumps({"tool": tool, "caller": {"agent": "a"}}) + "\n"
        for tool in ("fs.write", "fs.read")
    )
    code, out, err = invoke(
        "decide", "--engine", f"cedar:{policy}", "--cedar-schema", str(schema),
        "--keyring", str(keyring_path), stdin=lines,
    )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["action"], r["matched_rule"]) for r in records] == [
        ("deny", "no-writes"), ("allow", "all"),
    ]  # fmt: skip
