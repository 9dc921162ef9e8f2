"""Approval test fixtures: a store per backend, the example pack, a keyring, a journal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from refusalkit.approvals import ApprovalBook
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.journal import Journal, open_journal
from refusalkit.keyring import Keyring
from support.stores import store_url

__all__ = ["store_url"]

PUSH = {
    "tool": "git.push",
    "args": {"ref": "refs/tags/v1.2.0", "remote": "origin"},
    "caller": {"agent": "release-bot", "session": "s-1"},
}


@pytest.fixture
def ring() -> Keyring:
    return Keyring.generate()


@pytest.fixture
def point(ring: Keyring) -> DecisionPoint:
    return DecisionPoint(load_pack(example_path("release-approvals.yaml")), ring)


@pytest.fixture
def journal(store_url: str, ring: Keyring) -> Iterator[Journal]:
    with open_journal(store_url, ring) as log:
        yield log


@pytest.fixture
def book(journal: Journal, ring: Keyring) -> ApprovalBook:
    return ApprovalBook(journal, ring)


@pytest.fixture
def push() -> Callable[..., dict[str, Any]]:
    """``push(**args)``: the release-tag push, its arguments changed by keyword."""

    def make(**changes: Any) -> dict[str, Any]:
        return {**PUSH, "args": {**PUSH["args"], **changes}}

    return make
