"""Fixtures of the decision point's tests: small packs built in memory, and a decision point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.keyring import Keyring

PackFactory = Callable[..., DecisionPoint]


def make_pack(rules: list[dict[str, Any]], **extra: Any) -> Pack:
    """A pack named ``t`` with the given rules and top-level sections."""
    data: dict[str, Any] = {"policy": "t", "version": "1", "rules": rules, **extra}
    return Pack.from_mapping(data)


@pytest.fixture
def dp_for(keyring: Keyring) -> PackFactory:
    """Build a DecisionPoint for an in-memory pack: ``dp_for(rules, default="allow", ...)``."""

    def build(rules: list[dict[str, Any]], **extra: Any) -> DecisionPoint:
        return DecisionPoint(make_pack(rules, **extra), keyring)

    return build
