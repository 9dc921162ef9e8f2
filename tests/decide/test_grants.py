"""``Pack.grants``: what the ``@scope`` stage lets an agent call, asked without a request."""

from __future__ import annotations

import pytest

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.keyring import Keyring

BASE = {"policy": "p", "version": "v1", "default": "allow", "rules": []}
CAPS = {"reader": ["fs.read_*"], "editor": ["fs.*"]}


@pytest.mark.parametrize(
    ("agent", "tool", "granted"),
    [
        ("reader", "fs.read_file", True),
        ("reader", "fs.write_file", False),
        ("editor", "fs.write_file", True),
        ("stranger", "fs.read_file", False),
        (None, "fs.read_file", False),
    ],
)
def test_grants_agrees_with_the_scope_stage(agent: str | None, tool: str, granted: bool) -> None:
    pack = Pack.from_mapping(
        {**BASE, "capabilities": {"reader": ["fs.read_*"], "editor": ["fs.*"]}}
    )
    assert pack.grants(agent, tool) is granted
    caller = {} if agent is None else {"agent": agent}
    decision = DecisionPoint(pack, Keyring.generate()).decide({"tool": tool, "caller": caller})
    assert (decision.matched_rule != "@scope") is granted


def test_without_capabilities_everything_is_granted() -> None:
    assert Pack.from_mapping(BASE).grants(None, "anything.at_all")
