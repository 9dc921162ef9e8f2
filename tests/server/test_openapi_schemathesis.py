"""schemathesis against the published OpenAPI of a real server: no 5xx, and every answer conforms
to the document (status codes, content types, headers, response schemas). Bounded example counts
keep the run well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from svc_helpers import Deployment, ServerProcess, make_deployment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fuzz_target(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, Deployment]]:
    deployment = make_deployment(tmp_path_factory.mktemp("fuzz"))
    server = deployment.server().start()
    # an admin key may call every endpoint; a few decisions so journal reads have data
    httpx.post(
        f"{server.base_url}/v1/decide/batch",
        json={"requests": [{"tool": "fs.read"}] * 5},
        headers=deployment.keys.header("all"),
        timeout=30,
    )
    yield server, deployment
    server.stop()


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_the_api_conforms_to_its_openapi(fuzz_target: tuple[ServerProcess, Deployment]) -> None:
    server, deployment = fuzz_target
    admin = deployment.keys.header("admin")
    api = schemathesis.openapi.from_url(f"{server.base_url}/openapi.json", headers=admin)
    tested = []
    for result in api.get_all_operations():
        operation = result.ok()
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)

        @given(case=strategy)
        @settings(
            max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=admin, checks=CHECKS)

        check()
        tested.append(operation.label)
    assert len(tested) >= 12, tested
