"""The ``require-approval`` effect in packs: severity, ``ttl``, the ``approval`` object."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.decide import DecisionEncoder, DecisionPoint, load_pack
from refusalkit.errors import PolicyError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode, action_digest, canonical_json
from refusalkit.schemas import load_schema

_BASE: dict[str, Any] = {"policy": "p", "version": "v1", "default": "allow"}


def _point(tmp_path: Path, rules: list[dict[str, Any]], **extra: Any) -> DecisionPoint:
    path = tmp_path / "pack.json"
    path.write_text(json.dumps({**_BASE, **extra, "rules": rules}))
    return DecisionPoint(load_pack(path), Keyring.generate())


def _sha(body: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


_NEEDS = {"id": "needs", "effect": "require-approval", "when": {"tool": "db.migrate"}}


def test_deny_beats_approval_and_approval_beats_allow(tmp_path: Path) -> None:
    allow = {"id": "ok", "effect": "allow", "when": {"tool": "db.migrate"}}
    deny = {"id": "no", "effect": "deny", "when": {"tool": "db.migrate", "args.env": "prod"}}
    point = _point(tmp_path, [allow, _NEEDS, deny])
    staged = point.decide({"tool": "db.migrate", "args": {"env": "staging"}})
    assert (staged.action, staged.reason_code, staged.matched_rule) == (
        Action.DENY,
        ReasonCode.APPROVAL_REQUIRED,
        "needs",
    )
    prod = point.decide({"tool": "db.migrate", "args": {"env": "prod"}})
    assert (prod.reason_code, prod.matched_rule, prod.approval) == (
        ReasonCode.POLICY_DENIED,
        "no",
        None,
    )
    assert point.decide({"tool": "fs.read"}).approval is None


def test_an_unknown_condition_requires_approval(tmp_path: Path) -> None:
    """Fail closed: a require-approval rule on a missing field counts as matched."""
    rule = {**_NEEDS, "when": {"tool": "db.migrate", "args.env": {"prefix": "prod"}}}
    decision = _point(tmp_path, [rule]).decide({"tool": "db.migrate", "args": {}})
    assert decision.reason_code is ReasonCode.APPROVAL_REQUIRED
    assert decision.why_trail[0].missing


def test_ttl_default_and_declared(tmp_path: Path) -> None:
    point = _point(
        tmp_path, [_NEEDS, {**_NEEDS, "id": "quick", "ttl": "90s", "when": {"tool": "x"}}]
    )

    def lasts(decision: Decision) -> float:
        assert decision.approval is not None
        start = dt.datetime.fromisoformat(decision.decided_at.replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(decision.approval.expires_at.replace("Z", "+00:00"))
        return (end - start).total_seconds()

    assert lasts(point.decide({"tool": "db.migrate"})) == 900
    assert lasts(point.decide({"tool": "x"})) == 90


@pytest.mark.parametrize(
    "rule",
    [
        {"id": "r", "effect": "deny", "ttl": "15m"},
        {"id": "r", "effect": "require-approval", "ttl": "15 minutes"},
        {"id": "r", "effect": "require-approval", "ttl": "0s"},
        {"id": "r", "effect": "require-approval", "ttl": 900},
    ],
)
def test_bad_ttl_is_a_load_error(tmp_path: Path, rule: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        _point(tmp_path, [rule])


def test_ttl_on_another_effect_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="ttl is only for require-approval rules") as caught:
        _point(tmp_path, [{"id": "r", "effect": "deny", "ttl": "15m"}])
    assert caught.value.key == "rules[0].ttl"


def test_the_approval_object_on_the_wire(tmp_path: Path) -> None:
    point = _point(tmp_path, [_NEEDS])
    request = {"tool": "db.migrate", "args": {"env": "staging", "n": 3}, "caller": {"agent": "a"}}
    decision = point.decide(request)
    wire = decision.to_dict()
    jsonschema.validate(wire, load_schema("decision-v1"))
    assert DecisionEncoder().encode(decision) == canonical_json(wire)
    assert Decision.from_dict(wire) == decision
    assert decision.approval is not None
    body = {"tool": "db.migrate", "args": request["args"], "agent": "a", "pack": point.pack.digest}
    assert (
        decision.approval.action_digest
        == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    )
    assert decision.approval.tool == "db.migrate"
    assert all(
        v.startswith("<redacted:hmac-sha256:") for v in (decision.approval.args or {}).values()
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    args=st.dictionaries(st.text(max_size=8), _json, max_size=5),
    agent=st.none() | st.text(max_size=8),
)
def test_action_digest_is_sha256_of_rfc8785(args: dict[str, Any], agent: str | None) -> None:
    pack = "sha256:" + "0" * 64
    body = {"tool": "t", "args": args, "agent": agent, "pack": pack}
    assert (
        action_digest("t", args, agent, pack)
        == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    )
    other = action_digest("t", {**args, "extra": 1}, agent, pack)
    assert other != action_digest("t", args, agent, pack)


_TOKEN = re.compile(r"<redacted:hmac-sha256:[^:>]+:[0-9a-f]{16}>")


@given(secret=st.text(min_size=8, max_size=40))
def test_redacted_arguments_never_hold_the_value(secret: str) -> None:
    """The listed arguments hold no substring of 8 or more characters of an unrevealed value."""
    with tempfile.TemporaryDirectory() as where:
        point = _point(Path(where), [_NEEDS])
    decision = point.decide({"tool": "db.migrate", "args": {"p": secret, "d": [{"k": secret}]}})
    assert decision.approval is not None
    shown = _TOKEN.sub("", json.dumps(decision.approval.args, ensure_ascii=False))
    assert shown == '{"p": "", "d": [{"k": ""}]}'
    assert all(secret[i : i + 8] not in shown for i in range(len(secret) - 7))
