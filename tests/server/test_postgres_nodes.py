"""Several nodes on one PostgreSQL journal: two ``refusalkit serve`` processes take decisions
concurrently; afterwards the journal verifies and holds every acknowledged decision exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from svc_helpers import Deployment, ServerProcess, allowed_request, denied_request

from refusalkit.journal import open_journal

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _hammer(server: ServerProcess, deployment: Deployment, worker: int) -> list[tuple[str, int]]:
    """Decide 40 single requests and 5 batches of 10; returns (decision_id, index) acknowledged."""
    acknowledged: list[tuple[str, int]] = []
    with httpx.Client(
        base_url=server.base_url, timeout=60, headers=deployment.keys.header("decide")
    ) as client:
        for i in range(40):
            body = allowed_request(i) if i % 2 else denied_request(i)
            answer = client.post("/v1/decide", json=body)
            assert answer.status_code == 200, answer.text
            acknowledged.append(
                (answer.json()["decision_id"], int(answer.headers["Refusalkit-Journal-Index"]))
            )
        for b in range(5):
            batch = [denied_request(worker * 1000 + b * 10 + k) for k in range(10)]
            answer = client.post("/v1/decide/batch", json={"requests": batch})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            acknowledged += [
                (d["decision_id"], i)
                for d, i in zip(body["decisions"], body["indices"], strict=True)
            ]
    return acknowledged


def test_two_nodes_share_one_postgres_journal(
    deployment: Deployment,
    postgres_url: str,
    start_server: Callable[[ServerProcess], ServerProcess],
) -> None:
    nodes = [start_server(deployment.server(journal=postgres_url)) for _ in range(2)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(_hammer, nodes[w % 2], deployment, w) for w in range(6)]
        acknowledged = [item for f in futures for item in f.result()]
    for node in nodes:
        node.stop()

    with open_journal(postgres_url, deployment.keyring) as journal:
        journal.verify()
        size = journal.size()
        records: list[dict[str, Any]] = [json.loads(e) for e in journal.entries(0, size)]
    assert size == len(acknowledged) == 6 * 90
    indices = [i for _, i in acknowledged]
    assert sorted(indices) == list(range(size))  # gapless, none given twice
    for decision_id, index in acknowledged:
        assert records[index]["decision_id"] == decision_id
