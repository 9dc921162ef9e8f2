"""Property: the Cedar adapter refuses exactly when Cedar denies, or in a fail-closed case.

The documented fail-closed cases (docs/engines.md): Cedar gave no decision or raised (a value
Cedar cannot represent, a missing principal), a ``forbid`` errored (unknown → deny), or the
arguments hold what Cedar would read as an entity or extension value (never from a caller).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusalkit.engines import CedarAdapter
from refusalkit.keyring import Keyring
from refusalkit.model import ReasonCode
from support.records import refused_unencodable

POLICY = """\
@id("no-etc")
forbid(principal, action, resource) when { context.path like "/etc/*" };
@id("no-rm")
forbid(principal, action == Action::"shell.run", resource) when { context.command like "*rm *" };
@id("big")
forbid(principal, action, resource) when { context has size && context.size > 100 };
@id("coder-writes")
permit(principal == Agent::"coder", action, resource);
@id("reads")
permit(principal, action == Action::"fs.read", resource);
"""

values = st.one_of(
    st.sampled_from(["/etc/passwd", "/workspace/a", "rm -rf /", "ls", "", "/etc/"]),
    st.text(max_size=8),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=3), max_size=2),
)
requests = st.fixed_dictionaries(
    {"tool": st.sampled_from(["fs.read", "fs.write", "shell.run", "net.fetch"])},
    optional={
        "args": st.dictionaries(
            st.sampled_from(["path", "command", "size", "other"]), values, max_size=3
        ),
        "caller": st.fixed_dictionaries(
            {}, optional={"agent": st.sampled_from(["coder", "ops", 'x"y', ""]) | st.integers()}
        ),
    },
)


def _engine(adapter: CedarAdapter, request: dict[str, Any]) -> Any:
    try:
        return adapter.engine_answer(request)
    except Exception as exc:  # the adapter's own fail-closed failure, or cedarpy's
        return exc


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_refuses_iff_cedar_denies_or_fails_closed(tmp_path_factory: Any, request: Any) -> None:
    adapter = _adapter(tmp_path_factory)
    decision = adapter.decide(request)
    alone = _engine(adapter, request)
    if refused_unencodable(decision, request):  # as natively
        return
    if isinstance(alone, Exception) or alone.decision.value == "NoDecision":
        assert decision.reason_code is ReasonCode.UNAVAILABLE
        return
    forbid_errored = any(adapter.policies[e.split("`")[1]].forbid for e in alone.diagnostics.errors)
    if forbid_errored:
        assert decision.action.refuses  # the documented difference: unknown → deny
        assert any(s.matched and s.detail for s in decision.why_trail)
    else:
        assert decision.action.refuses is (not alone.allowed)
    assert decision.reason_code is not ReasonCode.UNAVAILABLE


_CACHE: dict[str, CedarAdapter] = {}


def _adapter(factory: Any) -> CedarAdapter:
    if "a" not in _CACHE:
        path = factory.mktemp("cedar") / "p.cedar"
        path.write_text(POLICY, encoding="utf-8")
        _CACHE["a"] = CedarAdapter(path, Keyring.generate(), deadline_ms=10_000)
    return _CACHE["a"]


OWNER_SCHEMA = """\
entity Agent;
entity Tool;
action "fs.write" appliesTo {
  principal: [Agent], resource: [Tool],
  context: { owner?: Agent, team?: Set<Agent>, meta?: { by?: Agent, note?: String } }
};
"""
OWNER_POLICY = """\
@id("owner-only")
permit(principal, action, resource) when {
  (context has owner && context.owner == principal) ||
  (context has team && context.team.contains(principal)) ||
  (context has meta && context.meta has by && context.meta.by == principal)
};
"""
_keys = st.sampled_from(["type", "id", "__entity", "__extn", "fn", "arg", "args", "by", "note"])
_leaves = st.sampled_from(["Agent", "coder", "Action", "ip", "", "127.0.0.1"]) | st.booleans()
_agent = st.fixed_dictionaries(
    {"type": st.just("Agent"), "id": st.just("coder")},
    optional={"note": _leaves, "__entity": st.just({"type": "Agent", "id": "coder"})},
)
_json = st.recursive(
    _leaves | _agent,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_forged = st.dictionaries(st.sampled_from(["owner", "team", "meta"]), _json, max_size=3)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=_forged)
def test_no_argument_makes_cedar_see_the_caller_as_owner(tmp_path_factory: Any, args: Any) -> None:
    """Under a schema that types `owner`, `team` and `meta.by` as entities, an owner-only permit
    allows only if Cedar reads an entity from the arguments: whatever shapes the caller sends
    (implicit `{type, id}`, escapes, nested, in sets, with extra keys), the adapter never allows.
    Cedar alone is fooled by a `{type, id}` object in place (test_cedar.py shows it); this test
    fails against an adapter that refuses only the escapes."""
    adapter = _owner_adapter(tmp_path_factory)
    request = {"tool": "fs.write", "args": args, "caller": {"agent": "coder"}}
    decision = adapter.decide(request)
    assert decision.action.refuses
    if decision.reason_code is ReasonCode.UNAVAILABLE and decision.why_trail:
        detail = decision.why_trail[-1].detail or ""
        assert "coder" not in detail  # the trail names the field, never the value


def _owner_adapter(factory: Any) -> CedarAdapter:
    if "owner" not in _CACHE:
        root = factory.mktemp("owner")
        (root / "p.cedar").write_text(OWNER_POLICY, encoding="utf-8")
        (root / "s.cedarschema").write_text(OWNER_SCHEMA, encoding="utf-8")
        _CACHE["owner"] = CedarAdapter(
            root / "p.cedar", Keyring.generate(), schema=root / "s.cedarschema", deadline_ms=10_000
        )
    return _CACHE["owner"]
