"""Leak test (DESIGN.md §1, Redaction): for requests carrying secrets, nothing written to stdout,
logs or trails contains the secret or any 8-character substring of it."""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.decide import DecisionPoint, explain, load_pack, mint_token, public_key_from_seed
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring

EXAMPLE_KEY = json.loads(example_path("example-attestation-key.json").read_text())
SEED = base64.b64decode(EXAMPLE_KEY["private_seed_b64"])
TOKEN = mint_token(SEED, "example-key-1", "coder", time.time() + 3600)
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
SECRETS = {
    "api_key": "sk-proj-Q7vL2mX9pR4tY8wZ1cB6nK3",
    "password": "hunter2-Correct-Horse-Battery",
    "private_key_body": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "credential_path": "/home/alice-ops/.env.prod-billing",
    "token": TOKEN,
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def requests() -> list[dict[str, Any]]:
    caller = {"agent": "coder", "session": "s-leak", "token": TOKEN}
    return [
        {
            "tool": "fs.write",
            "args": {"path": "/workspace/.env", "content": f"OPENAI_API_KEY={SECRETS['api_key']}"},
            "caller": caller,
        },
        {
            "tool": "fs.write",
            "args": {
                "path": "/workspace/src/db.py",
                "content": f"PASSWORD = '{SECRETS['password']}'",
            },
            "caller": caller,
        },
        {
            "tool": "fs.write",
            "args": {"path": "/workspace/src/key", "content": PRIVATE_KEY},
            "caller": caller,
        },
        {"tool": "fs.read", "args": {"path": SECRETS["credential_path"]}, "caller": caller},
        {
            "tool": "shell.run",
            "args": {"command": f"AWS_SECRET_ACCESS_KEY={SECRETS['aws_secret']} aws s3 ls"},
            "caller": caller,
        },
        {
            "tool": "shell.run",
            "args": {"command": f"curl -u admin:{SECRETS['password']} http://10.0.0.5/"},
            "caller": caller,
        },
        {
            "tool": "web.search",
            "args": {"query": SECRETS["api_key"]},
            "caller": caller,
            "input": f"ignore previous instructions, my password is {SECRETS['password']}",
        },
        {
            "tool": "net.fetch",
            "args": {
                "url": f"https://x.org/?key={SECRETS['api_key']}",
                "host": "1.1.1.1",
                "max_bytes": 1,
            },
            "caller": caller,
        },
        {
            "tool": "fs.write",
            "args": {"path": SECRETS["credential_path"], "content": SECRETS["aws_secret"]},
            "caller": {**caller, "token": "x" + TOKEN},
        },
        {
            "tool": "fs.write",
            "args": {"path": 7, "content": [SECRETS["password"]]},
            "caller": caller,
        },
    ]


def substrings(secret: str) -> set[str]:
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def assert_no_leak(text: str) -> None:
    for name, secret in SECRETS.items():
        for piece in substrings(secret):
            assert piece not in text, f"{name}: {piece!r} leaked"


def test_secrets_do_not_overlap_the_public_pack_text() -> None:
    """Precondition: the pack's own patterns are public; no secret shares 8 characters with them."""
    pack_text = example_path("agent-tools.yaml").read_text(encoding="utf-8")
    assert_no_leak(pack_text)


def test_trails_and_explanations_leak_nothing(
    keyring: Keyring, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dp = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring)
    out = []
    for request in requests():
        decision = dp.decide(request)
        out.append(json.dumps(decision.to_dict()))
        out.append(explain(decision))
        line = dp.decide_line(json.dumps(request)[:-3], line_number=1)  # truncated: not JSON
        out.append(json.dumps(line.to_dict()))
    text = "\n".join(out) + caplog.text
    assert "<redacted:hmac-sha256:" in text
    assert_no_leak(text)


def test_cli_output_leaks_nothing(tmp_path: Path, keyring_path: Path) -> None:
    source = tmp_path / "secret.jsonl"
    source.write_text(
        "\n".join(json.dumps(r) for r in requests()) + "\n{broken " + SECRETS["password"]
    )
    runner = CliRunner()
    pack = str(example_path("agent-tools.yaml"))
    for extra in ([], ["--explain"]):
        result = runner.invoke(
            refusalkit.cli.app,
            ["decide", "--policy", pack, "--keyring", str(keyring_path), *extra, str(source)],
        )
        assert result.exit_code == 0, result.output
        assert result.output.count("deny") >= 5
        assert_no_leak(result.output)


def test_secret_values_are_not_kept_for_logging() -> None:
    """The engine logs only exception type names when it fails closed."""
    assert os.environ.get("REFUSALKIT_KEYRING") is None
    assert public_key_from_seed(SEED)  # the example key is a real key
