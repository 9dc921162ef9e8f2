"""Pending approvals on the dashboard, in a real headless Chromium (Debian's, driven by
Playwright): an approver's key sees Approve and Deny buttons and approves with one click; a
read-only key sees the list without buttons; a post from another site is refused."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import sync_playwright
from svc_helpers import ServerProcess, make_deployment

from refusalkit.examples import example_path
from refusalkit.server import KeyStore, Scope

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
PUSH = {
    "tool": "git.push",
    "args": {"ref": "refs/tags/v1.2.0", "remote": "git@example.org:secret-mirror.git"},
    "caller": {"agent": "release-bot"},
}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not CHROMIUM.exists() or shutil.which("chromium") is None,
        reason="Debian chromium is not installed",
    ),
]


def _decide(server: ServerProcess, key: str) -> dict[str, Any]:
    answer = httpx.post(
        f"{server.base_url}/v1/decide",
        json=PUSH,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    decision: dict[str, Any] = answer.json()
    return decision


def test_approve_from_the_dashboard(
    tmp_path: Path, start_server: Callable[[ServerProcess], ServerProcess]
) -> None:
    deployment = make_deployment(tmp_path / "deploy")
    deployment.pack.write_text(example_path("release-approvals.yaml").read_text())
    store = KeyStore(deployment.keys.path)
    _, agent = store.add("release-bot", {Scope.DECIDE})
    _, alice = store.add("alice", {Scope.READ, Scope.APPROVE})
    server = start_server(deployment.server())
    request_id = _decide(server, agent)["approval"]["request_id"]
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        reader = browser.new_page()
        reader.goto(f"{server.base_url}/ui/login")
        reader.fill("#key", deployment.keys.read)
        reader.click("button[type=submit]")
        reader.wait_for_selector(f"[data-testid='approval-{request_id}']")
        assert reader.locator(f"[data-testid='grant-{request_id}']").count() == 0
        assert "approve</code> scope" in reader.content()

        page = browser.new_page(viewport={"width": 1360, "height": 1200})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{server.base_url}/ui/login")
        page.fill("#key", alice)
        page.click("button[type=submit]")
        row = page.locator(f"[data-testid='approval-{request_id}']")
        row.wait_for()
        shown = row.inner_text()
        assert "git.push" in shown
        assert "release-bot" in shown
        assert "refs/tags/v1.2.0" in shown  # a revealed class
        assert "secret-mirror" not in page.content()  # the rest is redacted
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-approvals.png"), full_page=True)
        page.click(f"[data-testid='grant-{request_id}']")
        page.wait_for_selector("[data-testid=approval-notice]")
        assert page.locator(f"[data-testid='approval-{request_id}']").count() == 0
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        browser.close()
    assert problems == []
    allowed = _decide(server, agent)
    assert allowed["action"] == "allow"
    assert "approved by alice" in allowed["why_trail"][-1]["detail"]

    # the session cookie of an approver, replayed by another site's form: refused
    again = _decide(server, agent)["approval"]["request_id"]
    forged = httpx.post(
        f"{server.base_url}/ui/approvals/{again}/grant",
        cookies=cookies,
        headers={"Origin": "https://evil.example"},
        timeout=30,
    )
    assert forged.status_code == 403
    assert _decide(server, agent)["action"] == "deny"
