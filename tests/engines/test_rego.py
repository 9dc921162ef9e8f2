"""The Rego adapter against real regopy (rego-cpp) (docs/engines.md, docs/design/engines.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.engines import AdapterFailure, RegoAdapter, load_mapping
from refusalkit.errors import PolicyError, UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode
from support.records import refused_unencodable, valid_record

Write = Callable[[str, str], Path]

POLICY = """\
package agent
import rego.v1

default allow := false
allow if input.tool in {"fs.read", "fs.write", "shell.run"}

deny contains {"rule": "no-etc", "field": "args.path", "message": "Not under /etc."} if {
    startswith(input.args.path, "/etc/")
}
deny contains {"rule": "rm-rf", "effect": "block", "field": "args.command"} if {
    contains(input.args.command, "rm -rf")
}
deny contains {"rule": "pay-approval", "reason_code": "approval-required"} if input.tool == "pay"
audit contains {"rule": "shell-watch", "field": "args.command"} if input.tool == "shell.run"

decision := {"allow": allow, "deny": deny, "audit": audit}

# no rule for `nothing`: undefined
conflict := 1 if input.tool
conflict := 2 if input.tool
size_limit := n if n := to_number(input.args.size)
sized := {"allow": size_limit < 10}
"""


def req(tool: str = "fs.write", **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "caller": {"agent": "coder"}}


@pytest.fixture
def policy_dir(write: Write) -> Path:
    path = write("bundle/agent.rego", POLICY)
    write("bundle/.manifest", '{"revision": "2026-07-01"}')
    return path.parent


@pytest.fixture
def rego(policy_dir: Path, keyring: Keyring) -> RegoAdapter:
    return RegoAdapter(policy_dir, keyring, query="data.agent.decision", deadline_ms=10_000)


def test_deny_entries_decide_with_rule_message_and_redacted_field(
    rego: RegoAdapter, keyring: Keyring
) -> None:
    decision = rego.decide(req(path="/etc/passwd"))
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.POLICY_DENIED, "no-etc",
    )  # fmt: skip
    assert decision.message == "Not under /etc."
    step = decision.why_trail[0]
    assert (step.field, step.decisive) == ("args.path", True)
    assert step.value == keyring.redactor().token("unclassified", "/etc/passwd")
    assert "/etc/passwd" not in json.dumps(decision.to_dict())
    assert decision.engine.name == "rego"
    assert decision.policy.version == "2026-07-01"
    valid_record(decision.to_dict())


def test_block_outranks_deny_and_every_entry_is_a_step(rego: RegoAdapter) -> None:
    decision = rego.decide(req(tool="shell.run", command="rm -rf /", path="/etc/x"))
    assert (decision.action, decision.matched_rule) == (Action.BLOCK, "rm-rf")
    rules = {(s.rule, s.effect, s.decisive) for s in decision.why_trail}
    assert rules == {
        ("no-etc", "deny", False), ("rm-rf", "block", True), ("shell-watch", "audit", False),
    }  # fmt: skip


def test_allow_audit_default_and_a_version_2_code(rego: RegoAdapter) -> None:
    assert rego.decide(req(path="/workspace/a")).matched_rule == "@allow"
    audit = rego.decide(req(tool="shell.run", command="ls"))
    assert (audit.action, audit.matched_rule) == (Action.AUDIT, "shell-watch")
    default = rego.decide(req(tool="net.fetch"))
    assert (default.action, default.matched_rule) == (Action.DENY, "@default")
    pay = rego.decide(req(tool="pay"))
    assert (pay.reason_code, pay.reason_codes_version) == (ReasonCode.APPROVAL_REQUIRED, 2)
    for decision in (audit, default, pay):
        valid_record(decision.to_dict())


@pytest.mark.parametrize(
    ("query", "request_", "problem"),
    [
        ("data.agent.nothing", req(), "data.agent.nothing is undefined"),
        ("data.agent.conflict", req(), "evaluation error"),
        ("data.agent.sized", req(size="many"), "evaluation error"),  # strict built-in errors
    ],
)
def test_undefined_and_evaluation_errors_are_unavailable(
    policy_dir: Path, keyring: Keyring, query: str, request_: Any, problem: str
) -> None:
    adapter = RegoAdapter(policy_dir, keyring, query=query)
    decision = adapter.decide(request_)
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.UNAVAILABLE, "@unavailable",
    )  # fmt: skip
    assert problem in (decision.why_trail[-1].detail or "")
    valid_record(decision.to_dict())


def test_a_defined_value_of_the_sized_rule_decides(policy_dir: Path, keyring: Keyring) -> None:
    adapter = RegoAdapter(policy_dir, keyring, query="data.agent.sized", deadline_ms=10_000)
    assert adapter.decide(req(size="3")).action is Action.ALLOW
    assert adapter.decide(req(size="30")).matched_rule == "@default"


@pytest.mark.parametrize(
    "document",
    [
        "1",
        '{"deny": []}',
        '{"allow": "yes"}',
        '{"allow": true, "deny": {"rule": "x"}}',
        '{"allow": true, "deny": [{"message": "no rule"}]}',
        '{"allow": true, "deny": [{"rule": "x", "reason_code": "nope"}]}',
        '{"allow": true, "deny": [{"rule": "x", "effect": "allow"}]}',
        '{"allow": true, "audit": [{"rule": 3}]}',
    ],
)
def test_malformed_documents_are_unavailable(write: Write, keyring: Keyring, document: str) -> None:
    path = write("m/p.rego", f"package m\nimport rego.v1\ndecision := {document}\n")
    decision = RegoAdapter(path, keyring, query="data.m.decision", deadline_ms=10_000).decide(req())
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "decision document" in (decision.why_trail[-1].detail or "")


def test_data_json_is_placed_at_its_directory(write: Write, keyring: Keyring) -> None:
    write(
        "b/policy.rego",
        'package p\nimport rego.v1\ndecision := {"allow": input.tool in data.cfg.tools}\n',
    )
    write("b/cfg/data.json", '{"tools": ["fs.read"]}')
    adapter = RegoAdapter(write("b/x.txt", "").parent, keyring, query="data.p.decision")
    assert adapter.decide(req(tool="fs.read")).action is Action.ALLOW
    assert adapter.decide(req(tool="fs.write")).action is Action.DENY


def test_the_digest_covers_every_file(write: Write, keyring: Keyring) -> None:
    def digest(folder: str, data: str) -> str:
        write(f"{folder}/p.rego", 'package p\ndecision := {"allow": true}\n')
        write(f"{folder}/data.json", data)
        return RegoAdapter(Path(write(f"{folder}/.keep", "")).parent, keyring,
                           query="data.p.decision").policy.digest  # fmt: skip

    assert digest("a", "{}") == digest("b", "{}") != digest("c", '{"x": 1}')


def test_bad_policies_and_queries_are_clear_errors(write: Write, keyring: Keyring) -> None:
    bad = write("bad/p.rego", "package x\nthis is not rego\n")
    with pytest.raises(PolicyError, match=r"not valid Rego: .*p\.rego:2:") as info:
        RegoAdapter(bad, keyring, query="data.x.decision", deadline_ms=10_000)
    assert info.value.file == str(bad)
    with pytest.raises(UsageError, match="not a Rego document path"):
        RegoAdapter(bad, keyring, query="data.x.decision; true", deadline_ms=10_000)
    with pytest.raises(PolicyError, match=r"no \.rego files"):
        RegoAdapter(write("empty/readme.txt", "").parent, keyring, query="data.x.d")


def test_compile_errors_stay_off_stdout(
    write: Write, keyring: Keyring, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(PolicyError):
        RegoAdapter(write("bad/p.rego", "package x\nnot rego\n"), keyring, query="data.x.d")
    assert capfd.readouterr().out == ""


def test_a_mapping_shapes_the_input(write: Write, keyring: Keyring) -> None:
    policy = write(
        "p/p.rego", 'package p\nimport rego.v1\ndecision := {"allow": input.file == "/ok"}\n'
    )
    mapping = load_mapping(write("m.yaml", "input: {file: args.path}\n"))
    adapter = RegoAdapter(policy, keyring, query="data.p.decision", mapping=mapping)
    assert adapter.decide(req(path="/ok")).action is Action.ALLOW
    assert adapter.decide(req(path="/no")).action is Action.DENY


# -- property: the adapter agrees with the engine's own document ---------------------------------

requests = st.fixed_dictionaries(
    {"tool": st.sampled_from(["fs.read", "fs.write", "shell.run", "net.fetch", "pay"])},
    optional={
        "args": st.dictionaries(
            st.sampled_from(["path", "command", "size"]),
            st.sampled_from(["/etc/x", "/w/a", "rm -rf /", "ls", "3", "x"])
            | st.integers()
            | st.none()
            | st.floats(allow_nan=False, allow_infinity=False),
            max_size=3,
        )
    },
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_refuses_iff_the_document_refuses_or_fails_closed(rego: RegoAdapter, request: Any) -> None:
    decision = rego.decide(request)
    if refused_unencodable(decision, request):  # as natively
        return
    try:
        document = rego.engine_answer(request)
    except AdapterFailure:
        document = None
    if document is None:  # undefined or an error: the documented fail-closed cases
        assert decision.reason_code is ReasonCode.UNAVAILABLE
        return
    engine_allows = document["allow"] is True and not document.get("deny")
    assert decision.action.refuses is (not engine_allows)
    assert decision.reason_code is not ReasonCode.UNAVAILABLE


def test_revealed_paths_show_in_clear_others_stay_tokens(
    policy_dir: Path, write: Write, keyring: Keyring
) -> None:
    mapping = load_mapping(write("m.yaml", "reveal: [args.path]\n"))
    adapter = RegoAdapter(policy_dir, keyring, query="data.agent.decision", mapping=mapping)
    step = adapter.decide(req(path="/etc/x")).why_trail[0]
    assert (step.field, step.field_class, step.value) == ("args.path", None, "/etc/x")
    hidden = RegoAdapter(policy_dir, keyring, query="data.agent.decision", deadline_ms=10_000)
    assert hidden.decide(req(path="/etc/x")).why_trail[0].value != "/etc/x"


BOTH = r"""
import pathlib, sys
from refusalkit.engines import RegoAdapter
from refusalkit.decide import DecisionPoint, Pack
from refusalkit.keyring import Keyring

policy = pathlib.Path(sys.argv[1])
rule = 'decision := {"allow": regex.match(`^a+$`, input.tool)}'
policy.write_text(f"package p\nimport rego.v1\n{rule}\n")
ring = Keyring.generate()
rego = RegoAdapter(policy, ring, query="data.p.decision", deadline_ms=10_000)
assert rego.decide({"tool": "aa"}).action == "allow"
rule = {"id": "r", "effect": "deny", "when": {"args.c": {"regex": r"rm\ \-rf\ /"}}}
pack = Pack.from_mapping({"policy": "x", "version": "1", "default": "allow", "rules": [rule]})
assert DecisionPoint(pack, ring).decide({"tool": "t", "args": {"c": "rm -rf /"}}).action == "deny"
print("ok")
"""


def test_rego_and_the_native_regex_engine_share_a_process(tmp_path: Path) -> None:
    """rego-cpp and google-re2 both carry RE2; in the wrong load order the next re2 compile after
    a Rego query aborts the process. A subprocess, so an abort fails this test, not the run."""
    script = tmp_path / "both.py"
    script.write_text(BOTH, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "p.rego")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_request_values_a_policy_echoes_are_redacted(write: Write, keyring: Keyring) -> None:
    """A policy may compute its entry's rule and message from the input; the record never shows
    the value in clear (a read key to the journal must not reveal what agents sent)."""
    policy = write(
        "echo/p.rego",
        "package p\nimport rego.v1\n"
        'deny contains {"rule": sprintf("no-%s", [input.args.path]),\n'
        '               "message": sprintf("cannot write %s for %s",\n'
        "                                  [input.args.path, input.caller.agent])}\n"
        '    if input.tool == "fs.write"\n'
        'decision := {"allow": true, "deny": deny}\n',
    )
    adapter = RegoAdapter(policy, keyring, query="data.p.decision", deadline_ms=10_000)
    request = {"tool": "fs.write", "args": {"path": "/home/dev/.ssh/id_rsa"},
               "caller": {"agent": "coder-7"}}  # fmt: skip
    alone = adapter.engine_answer(request)
    assert "/home/dev/.ssh/id_rsa" in json.dumps(alone)  # what OPA/Rego alone would log
    decision = adapter.decide(request)
    wire = json.dumps(decision.to_dict())
    assert "/home/dev/.ssh/id_rsa" not in wire
    token = keyring.redactor().token("unclassified", "/home/dev/.ssh/id_rsa")
    assert decision.matched_rule == f"no-{token}"
    assert decision.message == f"cannot write {token} for " + keyring.redactor().token(
        "unclassified", "coder-7"
    )
