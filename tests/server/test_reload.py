"""Hot reload of the pack: POST /v1/admin/reload and SIGHUP.

A bad pack never replaces a good one, and several workers all take the new pack.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import httpx
from svc_helpers import BAD_PACK, PACK, Deployment, ServerProcess, denied_request, wait_for

STRICTER = PACK.replace("version: v1", "version: v2").replace(
    "  - id: reads_ok\n    effect: allow\n    when: {tool: fs.read}\n",
    "  - id: reads_ok\n    effect: deny\n    when: {tool: fs.read}\n",
)
READ = {"tool": "fs.read", "args": {"path": "/workspace/src/a.py"}, "caller": {"agent": "coder"}}


def _decide(
    server: ServerProcess, deployment: Deployment, body: dict[str, object]
) -> dict[str, object]:
    answer = httpx.post(
        f"{server.base_url}/v1/decide",
        json=body,
        headers=deployment.keys.header("decide"),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()
    return result


def _digest(decision: dict[str, object]) -> str:
    policy = decision["policy"]
    assert isinstance(policy, dict)
    return str(policy["digest"])


def _reload(server: ServerProcess, deployment: Deployment) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/v1/admin/reload", headers=deployment.keys.header("admin"), timeout=30
    )


def test_admin_reload_swaps_a_good_pack_and_rejects_a_bad_one(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    server = start_server(deployment.server())
    before = _decide(server, deployment, READ)
    assert before["action"] == "allow"

    deployment.pack.write_text(STRICTER)
    answer = _reload(server, deployment)
    assert answer.status_code == 200, answer.text
    assert answer.json()["previous_digest"] == _digest(before) != answer.json()["digest"]
    after = _decide(server, deployment, READ)
    assert (after["action"], after["matched_rule"]) == ("deny", "reads_ok")
    assert _digest(after) == answer.json()["digest"]

    deployment.pack.write_text(BAD_PACK)
    rejected = _reload(server, deployment)
    assert rejected.status_code == 422
    error = rejected.json()["error"]
    assert error["code"] == "pack-rejected"
    assert _digest(after) in error["message"]
    still = _decide(server, deployment, READ)
    assert _digest(still) == _digest(after)
    assert still["action"] == "deny"
    assert _decide(server, deployment, denied_request())["matched_rule"] == "sensitive_path"


def test_sighup_reloads_and_a_bad_pack_keeps_the_old_one(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    server = start_server(deployment.server())
    first = _digest(_decide(server, deployment, READ))

    deployment.pack.write_text(STRICTER)
    server.signal(signal.SIGHUP)
    assert wait_for(lambda: _decide(server, deployment, READ)["action"] == "deny")
    second = _digest(_decide(server, deployment, READ))
    assert second != first

    deployment.pack.write_text(BAD_PACK)
    server.signal(signal.SIGHUP)
    assert wait_for(lambda: "pack reload rejected" in server.log())
    assert server.proc is not None
    assert server.proc.poll() is None
    assert _digest(_decide(server, deployment, READ)) == second


def test_several_workers_all_reload_on_sighup_and_admin_reload(
    deployment: Deployment, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    server = start_server(deployment.server(workers=2))

    def actions() -> set[str]:
        # new connections spread over the workers; each must answer with the pack in force
        return {
            httpx.post(
                f"{server.base_url}/v1/decide",
                json=READ,
                timeout=30,
                headers=deployment.keys.header("decide"),
            ).json()["action"]
            for _ in range(16)
        }

    assert actions() == {"allow"}
    deployment.pack.write_text(STRICTER)
    server.signal(signal.SIGHUP)
    assert wait_for(lambda: actions() == {"deny"})

    deployment.pack.write_text(PACK)
    assert _reload(server, deployment).status_code == 200  # answered by one worker...
    assert wait_for(lambda: actions() == {"allow"})  # ...and passed on to the other
    assert server.proc is not None
    assert server.proc.poll() is None

    # /metrics sums every worker's counters
    metrics = httpx.get(f"{server.base_url}/metrics", headers=deployment.keys.header("read")).text
    counted = sum(
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("refusalkit_decisions_total{")
    )
    stats = httpx.get(f"{server.base_url}/v1/stats", headers=deployment.keys.header("read")).json()
    assert counted == stats["total"]
