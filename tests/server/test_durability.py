"""Every acknowledged decision is in the journal, even while other processes read the journal.

Regression: a service that opened the same SQLite file twice in its own process lost its POSIX
locks, and a reader in another process then checked the WAL back, dropping acknowledged appends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
from svc_helpers import Deployment, ServerProcess, allowed_request, denied_request

from refusalkit.journal import open_journal


def test_acknowledged_decisions_survive_readers_in_other_processes(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    server = start_server(deployment.server())
    stop = threading.Event()

    def read_repeatedly() -> int:
        rounds = 0
        while not stop.is_set():
            with open_journal(deployment.journal, deployment.keyring) as journal:
                size = journal.size()
                journal.entries(max(0, size - 20), size)
            rounds += 1
        return rounds

    def decide(worker: int) -> list[tuple[str, int]]:
        acknowledged = []
        with httpx.Client(
            base_url=server.base_url, timeout=60, headers=deployment.keys.header("decide")
        ) as client:
            for i in range(200):
                body = allowed_request(i) if (i + worker) % 2 else denied_request(i)
                answer = client.post("/v1/decide", json=body)
                assert answer.status_code == 200
                acknowledged.append(
                    (answer.json()["decision_id"], int(answer.headers["Refusalkit-Journal-Index"]))
                )
        return acknowledged

    with ThreadPoolExecutor(max_workers=8) as pool:
        reader = pool.submit(read_repeatedly)
        deciders = [pool.submit(decide, w) for w in range(6)]
        acknowledged = [item for f in deciders for item in f.result()]
        stop.set()
        assert reader.result() > 0
    server.stop()

    with open_journal(deployment.journal, deployment.keyring) as journal:
        journal.verify()
        assert journal.size() == len(acknowledged) == 1200
        records = [json.loads(e) for e in journal.entries(0, journal.size())]
    for decision_id, index in acknowledged:
        assert records[index]["decision_id"] == decision_id
