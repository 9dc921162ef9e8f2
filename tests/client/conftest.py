"""Fixtures of the client tests: one real service per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.live_service import Deployment, ServerProcess, tools_deployment


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    return tools_deployment(Path(tmp_path_factory.mktemp("client")))


@pytest.fixture(scope="module")
def live(deployment: Deployment) -> Iterator[ServerProcess]:
    server = deployment.server().start()
    yield server
    server.stop()
