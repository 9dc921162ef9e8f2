"""Fixtures of the service tests (helpers live in ``svc_helpers``, importable from this folder)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from svc_helpers import Deployment, ServerProcess, make_deployment


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    """Fresh files for one test's service."""
    return make_deployment(tmp_path / "deploy")


@pytest.fixture(scope="module")
def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """Files shared by the tests of one module."""
    return make_deployment(tmp_path_factory.mktemp("deploy"))


@pytest.fixture(scope="module")
def live(shared_deployment: Deployment) -> Iterator[ServerProcess]:
    """One real server for a module's read-mostly tests."""
    server = shared_deployment.server().start()
    yield server
    server.stop()


@pytest.fixture
def start_server() -> Iterator[Callable[[ServerProcess], ServerProcess]]:
    """Start servers that are stopped after the test."""
    started: list[ServerProcess] = []

    def start(server: ServerProcess) -> ServerProcess:
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()
