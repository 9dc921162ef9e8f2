"""Leak test (docs/design/decision.md, Redaction): for requests carrying secrets, nothing written
to stdout,
logs or trails contains the secret or any 8-character substring of it."""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.decide import DecisionPoint, Pack, explain, load_pack, mint_token
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


def secret_pack() -> Pack:
    """The example pack plus rules whose ``==``/``in`` literals are the secrets themselves."""
    data = yaml.safe_load(example_path("agent-tools.yaml").read_text(encoding="utf-8"))
    known = [SECRETS["credential_path"], SECRETS["api_key"], "/nothing/here"]
    data["rules"] = [
        {"id": "known_secret_paths", "effect": "deny", "when": {"args.path": {"in": known}}},
        {"id": "known_key", "effect": "deny", "when": {"args.query": SECRETS["api_key"]}},
        {"id": "not_known", "effect": "audit", "when": {"args.content": {"not": {"in": known}}}},
        *data["rules"],
    ]
    return Pack.from_mapping(data, source="secret-pack")


def test_secret_literals_in_rules_do_not_leak_through_test_texts(keyring: Keyring) -> None:
    dp = DecisionPoint(secret_pack(), keyring)
    out = []
    matched = set()
    for request in requests():
        decision = dp.decide(request)
        matched.update(s.rule for s in decision.why_trail if s.matched)
        out.append(json.dumps(decision.to_dict()))
        out.append(explain(decision))
    assert {"known_secret_paths", "known_key"} <= matched  # the secret literals did match
    assert "withheld value" in "\n".join(out)
    assert_no_leak("\n".join(out))


def test_log_records_leak_nothing_even_when_decisions_fail(
    keyring: Keyring, caplog: pytest.LogCaptureFixture
) -> None:
    """Every log record at DEBUG, including those of decisions that failed closed on an internal
    error whose exception text carries the secret, is free of every secret."""
    caplog.set_level(logging.DEBUG)
    dp = DecisionPoint(secret_pack(), keyring)
    card = 9364029158346271  # a secret number beyond 2**53: RFC 8785 refuses it, naming it
    failing = [  # the canonical form cannot encode these: a lone surrogate fails closed
        # (deny + unavailable); a big integer makes the request malformed (deny + input-rejected)
        {"tool": "fs.write", "args": {"content": SECRETS["password"] + "\ud800"}},
        {"tool": "fs.write", "args": {"content": SECRETS["api_key"], "card": card}},
    ]
    decisions = []
    for request in [*requests(), *failing]:
        decisions.append(dp.decide(request))
        decisions.append(dp.decide_line(json.dumps(request), line_number=3))
    codes = [d.reason_code.value for d in decisions[-4:] if d.reason_code]
    assert codes == ["unavailable"] * 2 + ["input-rejected"] * 2
    records = caplog.records
    assert any(r.name.startswith("refusalkit") for r in records)  # the failure path did log
    texts = []
    for record in records:
        texts.append(record.getMessage() + (record.exc_text or "") + repr(record.args))
        if record.exc_info:
            texts.append(logging.Formatter().formatException(record.exc_info))
    text = "\n".join(texts)
    assert_no_leak(text)
    assert not any(piece in text for piece in substrings(str(card)))
