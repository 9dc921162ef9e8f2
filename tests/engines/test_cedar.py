"""The Cedar adapter against real cedarpy (docs/engines.md, docs/design/engines.md §Cedar)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cedarpy
import pytest

from refusalkit.engines import CedarAdapter, load_mapping
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, ReasonCode
from support.records import valid_record

ETC = """\
@id("no-etc")
forbid(principal, action, resource) when { context.path like "/etc/*" };

@id("permit-all")
permit(principal, action, resource);
"""

Write = Callable[[str, str], Path]


def req(tool: str = "fs.write", agent: str = "coder", **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "caller": {"agent": agent, "session": "s-1"}}


@pytest.fixture
def etc(write: Write, keyring: Keyring) -> CedarAdapter:
    return CedarAdapter(write("etc.cedar", ETC), keyring, deadline_ms=10_000)


def test_missing_attribute_cedar_allows_the_adapter_denies_and_shows_the_unknown(
    etc: CedarAdapter,
) -> None:
    request = req(content="x")  # no `path`
    alone = etc.engine_answer(request)
    assert alone.allowed  # Cedar skips the erroring forbid ...
    assert alone.diagnostics.reasons == ["policy1"]
    decision = etc.decide(request)  # ... refusalkit counts it as matched
    assert decision.action is Action.DENY
    assert decision.reason_code is ReasonCode.POLICY_DENIED
    assert decision.matched_rule == "no-etc"
    step = decision.why_trail[0]
    assert (step.rule, step.matched, step.decisive, step.missing) == ("no-etc", True, True, True)
    assert step.field == "args.path"
    assert step.value is None
    assert "does not have the attribute `path`" in (step.detail or "")
    valid_record(decision.to_dict())


def test_a_forbid_that_matches_denies_with_its_id_and_a_redacted_value(
    etc: CedarAdapter, keyring: Keyring
) -> None:
    decision = etc.decide(req(path="/etc/shadow"))
    assert (decision.action, decision.matched_rule) == (Action.DENY, "no-etc")
    step = decision.why_trail[0]
    assert step.value == keyring.redactor().token("unclassified", "/etc/shadow")
    assert "/etc/shadow" not in json.dumps(decision.to_dict())
    assert decision.engine.name == "cedar"
    assert decision.engine.version.startswith("cedarpy 4.")
    assert decision.policy.id == "etc"
    assert decision.policy.digest.startswith("sha256:")


def test_an_allowed_request_names_the_permit(etc: CedarAdapter) -> None:
    decision = etc.decide(req(path="/workspace/a.py"))
    assert (decision.action, decision.matched_rule, decision.reason_code) == (
        Action.ALLOW, "permit-all", None,
    )  # fmt: skip
    assert [s.rule for s in decision.why_trail] == ["permit-all"]


def test_a_deny_with_no_determining_policy_is_default(write: Write, keyring: Keyring) -> None:
    adapter = CedarAdapter(
        write("p.cedar", '@id("reads")\npermit(principal, action == Action::"fs.read", resource);'),
        keyring,
    )
    decision = adapter.decide(req(tool="fs.write"))
    assert not adapter.engine_answer(req(tool="fs.write")).diagnostics.reasons
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.POLICY_DENIED, "@default",
    )  # fmt: skip
    assert decision.why_trail[-1].rule == "@default"
    valid_record(decision.to_dict())


def test_the_first_forbid_in_file_order_decides(write: Write, keyring: Keyring) -> None:
    text = """\
permit(principal, action, resource);
@id("second")
forbid(principal, action, resource) when { context.path like "/etc/*" };
@id("third")
forbid(principal, action, resource) when { context.path like "*shadow" };
"""
    decision = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000).decide(
        req(path="/etc/shadow")
    )
    assert decision.matched_rule == "second"
    assert [(s.rule, s.decisive) for s in decision.why_trail] == [
        ("second", True), ("third", False),
    ]  # fmt: skip


def test_annotations_set_effect_code_and_message(write: Write, keyring: Keyring) -> None:
    text = """\
@id("watch")
@effect("audit")
permit(principal, action == Action::"shell.run", resource);
@id("approve")
@reason_code("approval-required")
@message("A human must approve payments.")
forbid(principal, action == Action::"pay", resource);
@id("rm-rf")
@effect("block")
forbid(principal, action, resource) when { context.command like "rm -rf*" };
permit(principal, action == Action::"pay", resource);
"""
    adapter = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000)
    audit = adapter.decide(req(tool="shell.run", command="ls"))
    assert (audit.action, audit.matched_rule) == (Action.AUDIT, "watch")
    pay = adapter.decide(req(tool="pay", command="x"))
    assert (pay.action, pay.reason_code, pay.message) == (
        Action.DENY, ReasonCode.APPROVAL_REQUIRED, "A human must approve payments.",
    )  # fmt: skip
    assert pay.reason_codes_version == 2
    valid_record(pay.to_dict())
    block = adapter.decide(req(tool="pay", command="rm -rf /"))
    assert (block.action, block.matched_rule) == (Action.BLOCK, "rm-rf")  # block outranks


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ('@effect("allow")\nforbid', "@effect of policy0"),
        ('@reason_code("nope")\nforbid', "reason"),
    ],
)
def test_bad_annotations_are_policy_errors(
    write: Write, keyring: Keyring, annotation: str, problem: str
) -> None:
    path = write("p.cedar", f"{annotation}(principal, action, resource);")
    with pytest.raises(PolicyError, match=problem) as info:
        CedarAdapter(path, keyring, deadline_ms=10_000)
    assert info.value.file == str(path)


def test_not_cedar_is_a_policy_error(write: Write, keyring: Keyring) -> None:
    with pytest.raises(PolicyError, match="not valid Cedar"):
        CedarAdapter(write("p.cedar", "permit(principal, action"), keyring)


def test_error_details_never_carry_request_values(write: Write, keyring: Keyring) -> None:
    text = """\
@id("no-loopback")
forbid(principal, action, resource) when { ip(context.host).isLoopback() };
permit(principal, action, resource);
"""
    adapter = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000)
    request = req(tool="net.fetch", host="secret-host-value")
    assert "secret-host-value" in str(adapter.engine_answer(request).diagnostics.errors)
    decision = adapter.decide(request)
    assert (decision.action, decision.matched_rule) == (Action.DENY, "no-loopback")
    assert "secret-host-value" not in json.dumps(decision.to_dict())


def test_entity_ids_cannot_inject_cedar_syntax(write: Write, keyring: Keyring) -> None:
    text = '@id("only-coder")\npermit(principal == Agent::"coder", action, resource);'
    adapter = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000)
    assert adapter.decide(req(agent="coder")).action is Action.ALLOW
    hostile = 'x", action, resource) || principal == Agent::"coder'
    assert adapter.decide(req(agent=hostile)).action is Action.DENY
    assert adapter.decide(req(agent="coder\n")).action is Action.DENY


@pytest.mark.parametrize(
    ("request_", "problem"),
    [
        ({"tool": "fs.write", "args": {"path": 1.5}, "caller": {"agent": "a"}}, "NoDecision"),
        ({"tool": "fs.write", "args": {"path": None}, "caller": {"agent": "a"}}, "build request"),
        ({"tool": "fs.write", "args": {}}, "principal id"),
    ],
)
def test_what_cedar_cannot_decide_fails_closed(
    etc: CedarAdapter, request_: Any, problem: str
) -> None:
    decision = etc.decide(request_)
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.UNAVAILABLE, "@unavailable",
    )  # fmt: skip
    assert problem in (decision.why_trail[-1].detail or "")
    valid_record(decision.to_dict())


@pytest.mark.parametrize("request_", [{"tool": 3}, [1, 2], {"tool": "a", "args": []}])
def test_a_malformed_request_is_input_rejected_as_the_native_engine_decides_it(
    etc: CedarAdapter, request_: Any
) -> None:
    decision = etc.decide(request_)
    assert (decision.action, decision.reason_code, decision.matched_rule) == (
        Action.DENY, ReasonCode.INPUT_REJECTED, "@request",
    )  # fmt: skip
    assert not decision.retryable
    assert "malformed request" in (decision.why_trail[-1].detail or "")
    valid_record(decision.to_dict())


def test_lines_that_are_not_json_are_input_rejected(etc: CedarAdapter) -> None:
    decisions = list(
        etc.decide_lines(
            ['{"tool": "a", "args": {"path": "/w"}, "caller": {"agent": "c"}}\n', "\n", "{no"]
        )
    )
    assert [n for n, _ in decisions] == [1, 3]
    assert decisions[0][1].action is Action.ALLOW
    assert decisions[1][1].reason_code is ReasonCode.INPUT_REJECTED
    assert decisions[1][1].matched_rule == "@request"
    assert decisions[1][1].why_trail[-1].detail == "line 3: not JSON (JSONDecodeError)"


def test_a_mapping_file_changes_entities_context_classes_and_policy(
    write: Write, keyring: Keyring
) -> None:
    mapping = write(
        "m.yaml",
        """\
principal: {type: User, id: caller.user}
action: {type: Action, id: tool}
resource: {type: Tool, id: tool}
input: {file: args.path}
classes: {args.path: file-path}
policy: {id: fs-guard, version: "2026-07"}
""",
    )
    text = """\
@id("etc")
forbid(principal == User::"bob", action, resource) when { context.file like "/etc/*" };
permit(principal, action, resource);
"""
    adapter = CedarAdapter(write("p.cedar", text), keyring, mapping=load_mapping(mapping))
    request = {"tool": "fs.write", "args": {"path": "/etc/x"}, "caller": {"user": "bob"}}
    decision = adapter.decide(request)
    assert decision.matched_rule == "etc"
    step = decision.why_trail[0]
    assert (step.field, step.field_class) == ("args.path", "file-path")
    assert step.value == keyring.redactor().token("file-path", "/etc/x")
    assert (decision.policy.id, decision.policy.version) == ("fs-guard", "2026-07")


def test_the_digest_covers_the_policy_text(write: Write, keyring: Keyring) -> None:
    first = CedarAdapter(write("a/p.cedar", ETC), keyring, deadline_ms=10_000).policy.digest
    same = CedarAdapter(write("b/p.cedar", ETC), keyring, deadline_ms=10_000).policy.digest
    other = CedarAdapter(
        write("c/p.cedar", ETC + "\n// changed\n"), keyring, deadline_ms=10_000
    ).policy.digest
    assert first == same != other


def test_no_engine_decision_is_bare(etc: CedarAdapter) -> None:
    """A sanity check that the adapter's engine is the real cedarpy."""
    assert isinstance(etc.engine_answer(req()), cedarpy.AuthzResult)


@pytest.mark.parametrize(
    "owner",
    [
        {"__entity": {"type": "Agent", "id": "coder"}},
        [{"__entity": {"type": "Agent", "id": "coder"}}],
        {"nested": {"__extn": {"fn": "ip", "arg": "127.0.0.1"}}},
    ],
)
def test_a_caller_cannot_forge_entity_references(
    write: Write, keyring: Keyring, owner: Any
) -> None:
    """Cedar's JSON reads {"__entity": …} in a context as an entity: from the request's args it
    would let a caller forge `context.owner == principal`. Cedar alone is fooled; the adapter
    refuses the request (unavailable)."""
    text = '@id("owner")\npermit(principal, action, resource) when { context.owner == principal };'
    adapter = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000)
    forged = req(owner=owner)
    if isinstance(owner, dict) and "__entity" in owner:
        alone = cedarpy.is_authorized(
            {"principal": {"type": "Agent", "id": "coder"}, "action": {"type": "Action", "id": "x"},
             "resource": {"type": "Tool", "id": "x"}, "context": forged["args"]}, text, "[]",
        )  # fmt: skip
        assert alone.allowed  # Cedar alone: the forgery works
    decision = adapter.decide(forged)
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
    assert "args.owner" in (decision.why_trail[-1].detail or "")
    assert "escape" in (decision.why_trail[-1].detail or "")
    assert adapter.decide(req(owner="coder")).action is Action.DENY  # a string is no entity


def test_schema_and_entities_files(write: Write, keyring: Keyring) -> None:
    schema = write(
        "s.cedarschema",
        """\
entity Agent in [Team];
entity Team;
entity Tool;
action "fs.write" appliesTo { principal: [Agent], resource: [Tool], context: { path: String } };
""",
    )
    entities = write(
        "e.json",
        '[{"uid": {"type": "Agent", "id": "coder"}, "attrs": {},'
        ' "parents": [{"type": "Team", "id": "devs"}]},'
        ' {"uid": {"type": "Team", "id": "devs"}, "attrs": {}, "parents": []}]',
    )
    policy = write("p.cedar", '@id("devs")\npermit(principal in Team::"devs", action, resource);')
    adapter = CedarAdapter(policy, keyring, schema=schema, entities=entities, deadline_ms=10_000)
    assert adapter.decide(req(path="/a")).matched_rule == "devs"  # via the entity's parent
    assert adapter.decide(req(agent="ops", path="/a")).matched_rule == "@default"
    secret = "/home/dev/.ssh/id_rsa-is-not-a-number"
    bad = adapter.decide({"tool": "fs.write", "args": {"path": 3, "x": secret},
                          "caller": {"agent": "coder"}})  # fmt: skip
    assert bad.reason_code is ReasonCode.UNAVAILABLE  # the schema rejects the context
    assert secret not in json.dumps(bad.to_dict())  # Cedar's message quotes the context
    plain = CedarAdapter(policy, keyring)
    assert adapter.policy.digest != plain.policy.digest  # schema and entities are sources too


def test_bad_schema_and_entities_files_are_policy_errors(write: Write, keyring: Keyring) -> None:
    policy = write("p.cedar", ETC)
    with pytest.raises(PolicyError, match="not a valid Cedar schema") as info:
        CedarAdapter(policy, keyring, schema=write("s.cedarschema", "entity {"))
    assert info.value.file is not None
    with pytest.raises(PolicyError, match="not valid Cedar entities"):
        CedarAdapter(policy, keyring, entities=write("e.json", "[{]"))
    schema = write("t.cedarschema", "entity Agent; entity Tool;")
    strays = write("f.json", '[{"uid": {"type": "Team", "id": "x"}, "attrs": {}, "parents": []}]')
    CedarAdapter(policy, keyring, entities=strays)  # without a schema any entity type will do
    with pytest.raises(PolicyError, match="not valid Cedar entities"):
        CedarAdapter(policy, keyring, schema=schema, entities=strays)  # the schema has no Team


GROUPS = """\
entity Agent;
entity Tool;
action "writes";
action "fs.write" in ["writes"] appliesTo {
  principal: [Agent], resource: [Tool],
  context: { owner?: Agent, team?: Set<Agent>, meta?: { by?: Agent }, addr?: ipaddr }
};
action "fs.read" appliesTo { principal: [Agent], resource: [Tool], context: {} };
"""


def test_schema_action_groups_hold(write: Write, keyring: Keyring) -> None:
    """With the schema, Cedar knows `fs.write in Action::"writes"`: the entities are parsed with
    it, so the adapter denies as Cedar does (without the schema the group was lost: allow)."""
    text = (
        '@id("no-writes")\nforbid(principal, action in Action::"writes", resource);\n'
        '@id("all")\npermit(principal, action, resource);\n'
    )
    policy, schema = write("p.cedar", text), write("s.cedarschema", GROUPS)
    adapter = CedarAdapter(policy, keyring, schema=schema, deadline_ms=10_000)
    denied = adapter.decide(req("fs.write"))
    assert (denied.action, denied.matched_rule) == (Action.DENY, "no-writes")
    assert adapter.decide(req("fs.read")).action is Action.ALLOW
    request = adapter.cedar_request(req("fs.write"))
    entities = cedarpy.Entities.from_json_str("[]", cedarpy.Schema.from_str(GROUPS))
    assert not cedarpy.is_authorized(request, text, entities, GROUPS).allowed  # Cedar's answer


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({"owner": {"type": "Agent", "id": "coder"}}, "args.owner"),
        ({"owner": {"type": "Agent", "id": "coder", "note": "x"}}, "args.owner"),
        ({"team": [{"type": "Agent", "id": "coder"}]}, "args.team[0]"),
        ({"meta": {"by": {"type": "Agent", "id": "coder"}}}, "args.meta.by"),
        ({"owner": {"__entity": {"type": "Agent", "id": "coder"}}}, "args.owner"),
        ({"addr": {"fn": "ip", "arg": "127.0.0.1"}}, "args.addr"),
        ({"addr": {"fn": "ip", "args": ["127.0.0.1"]}}, "args.addr"),
        ({"addr": {"__extn": {"fn": "ip", "arg": "127.0.0.1"}}}, "args.addr"),
    ],
)
def test_with_a_schema_implicit_entity_references_are_refused(
    write: Write, keyring: Keyring, args: dict[str, Any], where: str
) -> None:
    """Under a schema Cedar reads `{"type", "id"}` where it expects an entity, and `{"fn", "arg"}`
    where it expects an extension value: an owner-only permit would let a forged owner through
    (Cedar alone allows it). The adapter refuses, naming the field."""
    text = (
        '@id("owner")\npermit(principal, action, resource) when {\n'
        "  (context has owner && context.owner == principal) ||\n"
        "  (context has team && context.team.contains(principal)) ||\n"
        "  (context has meta && context.meta has by && context.meta.by == principal) ||\n"
        "  (context has addr && context.addr.isLoopback())\n};\n"
    )
    adapter = CedarAdapter(
        write("p.cedar", text), keyring, schema=write("s.cedarschema", GROUPS), deadline_ms=10_000
    )
    forged = req(**args)
    entities = cedarpy.Entities.from_json_str("[]", cedarpy.Schema.from_str(GROUPS))
    request = {**adapter.cedar_request(req()), "context": forged["args"]}
    assert cedarpy.is_authorized(request, text, entities, GROUPS).allowed  # Cedar alone: fooled
    decision = adapter.decide(forged)
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.UNAVAILABLE)
    detail = decision.why_trail[-1].detail or ""
    assert f"{where} would be read by Cedar as an" in detail
    assert "coder" not in detail
    assert "127.0.0.1" not in detail


def test_records_that_only_look_like_entities_pass_where_cedar_reads_records(
    write: Write, keyring: Keyring
) -> None:
    """Without a schema Cedar reads `{"type", "id"}` as a record, and the context itself is always
    a record: neither is refused. A string is never an entity."""
    text = '@id("all")\npermit(principal, action, resource);'
    plain = CedarAdapter(write("p.cedar", text), keyring, deadline_ms=10_000)
    assert plain.decide(req(owner={"type": "Agent", "id": "coder"})).action is Action.ALLOW
    assert plain.decide(req(addr={"fn": "ip", "arg": "127.0.0.1"})).action is Action.ALLOW
    schema = write(
        "s.cedarschema", GROUPS.replace("context: {}", "context: {type: String, id: String}")
    )
    typed = CedarAdapter(write("q.cedar", text), keyring, schema=schema, deadline_ms=10_000)
    assert typed.decide(req("fs.read", type="Agent", id="coder")).action is Action.ALLOW
    assert typed.decide(req("fs.write", owner="coder")).reason_code is ReasonCode.UNAVAILABLE


def test_a_context_too_deep_to_check_is_refused(write: Write, keyring: Keyring) -> None:
    """The forgery check has a depth bound; past it the request is refused, not waved through."""
    adapter = CedarAdapter(write("p.cedar", ETC), keyring, deadline_ms=10_000)
    deep: Any = "leaf"
    for _ in range(70):
        deep = [deep]
    decision = adapter.decide(req(path="/workspace/a", deep=deep))
    assert decision.reason_code is ReasonCode.UNAVAILABLE
    assert "args.deep[0][0]" in (decision.why_trail[-1].detail or "")
    assert "nested too deep to check" in (decision.why_trail[-1].detail or "")
    assert adapter.decide(req(path="/workspace/a", deep=[[["leaf"]]])).action is Action.ALLOW
