"""``refusalkit approvals`` and ``decide --journal``: the whole flow on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.examples import example_path
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring

runner = CliRunner()
PACK = str(example_path("release-approvals.yaml"))
PUSH = json.dumps(
    {"tool": "git.push", "args": {"ref": "refs/tags/v1.2.0", "remote": "origin"},
     "caller": {"agent": "release-bot"}}
)  # fmt: skip


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _decide(store: str, ring: Path) -> dict[str, Any]:
    code, out, err = _run(
        "decide", "-p", PACK, "--keyring", str(ring), "--journal", store, "-", stdin=PUSH
    )
    assert code == 0, err
    decision: dict[str, Any] = json.loads(out)
    return decision


def test_list_grant_retry_replay(store_url: str, keyring_path: Path) -> None:
    ring = str(keyring_path)
    asked = _decide(store_url, keyring_path)
    assert (asked["action"], asked["reason_code"]) == ("deny", "approval-required")
    request_id = asked["approval"]["request_id"]

    code, out, _ = _run("approvals", "list", store_url, "--keyring", ring, "--json")
    [row] = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert (row["request_id"], row["tool"], row["agent"]) == (request_id, "git.push", "release-bot")
    assert row["args"]["remote"].startswith("<redacted:")  # never the value
    assert "origin" not in out
    code, out, _ = _run("approvals", "list", store_url, "--keyring", ring)
    assert request_id in out
    assert "Pushing a release tag" in out

    code, _, err = _run(
        "approvals", "grant", store_url, request_id, "--approver", "release-bot", "--keyring", ring
    )
    assert code == 2
    assert "cannot approve its own request" in err
    code, out, err = _run(
        "approvals",
        "grant",
        store_url,
        request_id,
        "--approver",
        "alice",
        "--ttl",
        "5m",
        "--keyring",
        ring,
    )
    assert code == 0, err
    granted = json.loads(out)

    allowed = _decide(store_url, keyring_path)
    assert allowed["action"] == "allow"
    assert allowed["approval"]["grant_index"] == granted["journal_index"]
    assert allowed["why_trail"][-1]["rule"] == "@approval"
    replay = _decide(store_url, keyring_path)
    assert replay["reason_code"] == "approval-required"
    assert "already used" in replay["why_trail"][-1]["detail"]
    with open_journal(store_url, Keyring.load(keyring_path)) as journal:
        journal.verify()


def test_deny_and_bad_input(store_url: str, keyring_path: Path) -> None:
    ring = str(keyring_path)
    request_id = _decide(store_url, keyring_path)["approval"]["request_id"]
    code, _, err = _run(
        "approvals",
        "grant",
        store_url,
        request_id,
        "--approver",
        "a",
        "--ttl",
        "soon",
        "--keyring",
        ring,
    )
    assert code == 2
    assert "not a duration" in err
    code, _, err = _run(
        "approvals",
        "grant",
        store_url,
        request_id,
        "--approver",
        "a",
        "--ttl",
        "1d",
        "--keyring",
        ring,
    )
    assert code == 2
    assert "rule's ttl" in err
    code, out, err = _run(
        "approvals",
        "deny",
        store_url,
        request_id,
        "--approver",
        "bob",
        "--reason",
        "not now",
        "--keyring",
        ring,
    )
    assert code == 0, err
    assert json.loads(out)["denied"] == request_id
    assert (
        _run("approvals", "list", store_url, "--keyring", ring)[1].strip()
        == "no pending requests for approval"
    )
    refused = _decide(store_url, keyring_path)
    assert "refused by bob" in refused["why_trail"][-1]["detail"]
    code, _, err = _run(
        "approvals", "deny", store_url, "nope", "--approver", "bob", "--keyring", ring
    )
    assert code == 2
    assert "no request for approval" in err
    assert "Traceback" not in err
