"""Fixtures of the integration tests: each test runs once with a local enforcer and once with
``Client`` against a real ``refusalkit serve`` on loopback; both journal to SQLite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import refusalkit
from refusalkit.client import Client
from support.live_service import Deployment, ServerProcess, Setup, tools_deployment
from support.tainting import APPROVAL_PACK, TAINT_PACK


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment, ServerProcess]]:
    deployment = tools_deployment(Path(tmp_path_factory.mktemp("remote")))
    server = deployment.server().start()
    yield deployment, server
    server.stop()


@pytest.fixture(params=["local", "remote"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    session = f"s-{uuid.uuid4()}"
    if request.param == "local":
        deployment = tools_deployment(tmp_path / "local")
        journal = str(tmp_path / "local.db")
        with refusalkit.enforcer(
            policy=deployment.pack, journal=journal, keyring=deployment.keyring_path
        ) as local:
            yield Setup("local", local, deployment, journal, session)
        return
    deployment, server = request.getfixturevalue("remote")
    with Client(server.base_url, api_key=deployment.keys.all) as client:
        yield Setup("remote", client, deployment, deployment.journal, session)


def _local(root: Path, pack: str) -> Iterator[Setup]:
    deployment = tools_deployment(root)
    deployment.pack.write_text(pack, encoding="utf-8")
    journal = str(root / "journal.db")
    with refusalkit.enforcer(
        policy=deployment.pack, journal=journal, keyring=deployment.keyring_path
    ) as local:
        yield Setup("local", local, deployment, journal, f"s-{uuid.uuid4()}")


@pytest.fixture
def tainting(tmp_path: Path) -> Iterator[Setup]:
    """A local enforcer under a pack whose result filter taints the session, and whose rule then
    refuses ``delete_file``; journaled to SQLite."""
    yield from _local(tmp_path / "taint", TAINT_PACK)


@pytest.fixture
def approving(tmp_path: Path) -> Iterator[Setup]:
    """A local enforcer under a pack where pushing a release tag needs a person's approval."""
    yield from _local(tmp_path / "approve", APPROVAL_PACK)
