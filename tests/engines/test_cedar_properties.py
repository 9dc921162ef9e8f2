"""Property: the Cedar adapter refuses exactly when Cedar denies, or in a fail-closed case.

The documented fail-closed cases (docs/engines.md): Cedar gave no decision or raised (a value
Cedar cannot represent, a missing principal), or a ``forbid`` errored (unknown → deny).
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
