"""The decision point's CLI verbs, through typer's runner and through the real console script."""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring, signing_key_id
from refusalkit.model import Decision

PACK = str(example_path("agent-tools.yaml"))
CASES = str(example_path("agent-tools.cases.yaml"))
REQUESTS = str(example_path("requests.jsonl"))
runner = CliRunner()


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(refusalkit.cli.app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_decide_streams_one_decision_per_line(keyring_path: Path) -> None:
    code, out, _ = invoke("decide", "--policy", PACK, "--keyring", str(keyring_path), REQUESTS)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == len(Path(REQUESTS).read_text().splitlines())
    decisions = [Decision.from_dict(json.loads(line)) for line in lines]
    assert {d.action.value for d in decisions} == {"allow", "audit", "deny", "block"}


def test_decide_reads_stdin_and_rejects_bad_lines(keyring_path: Path) -> None:
    stdin = '{"tool": "fs.read", "args": {"path": "/workspace/a"}}\n\nnot json\n["x"]\n'
    code, out, _ = invoke("decide", "-p", PACK, "--keyring", str(keyring_path), "-", stdin=stdin)
    assert code == 0
    first, second, third = (json.loads(line) for line in out.splitlines())
    assert first["reason_code"] == "attestation-failed"
    assert (second["reason_code"], second["retryable"]) == ("input-rejected", False)
    assert "line 3" in second["why_trail"][-1]["detail"]
    assert "line 4" in third["why_trail"][-1]["detail"]


def test_decide_explain(keyring_path: Path) -> None:
    code, out, _ = invoke(
        "decide", "-p", PACK, "--keyring", str(keyring_path), "--explain", REQUESTS
    )
    assert code == 0
    assert "line 4: DENY policy-denied by sensitive_path" in out
    assert "→  7  sensitive_path" in out
    assert "<redacted:hmac-sha256:k1:" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["decide", "-p", "/nonexistent/pack.yaml"], "no such file"),
        (["decide", "-p", PACK, "/nonexistent/requests.jsonl"], "no such file"),
        (["decide"], "--policy"),
        (["decide", "-p", PACK, "--keyring", "/nonexistent/keys.json"], "no keyring"),
    ],
)
def test_decide_bad_usage_exits_2(args: list[str], words: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2
    assert words in out + err


def test_decide_bad_pack_exits_2_with_file_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy: p\nversion: v1\nrules:\n  - id: x\n    effect: maybe\n")
    code, _, err = invoke("decide", "-p", str(bad), "-", stdin="")
    assert code == 2
    first = err.splitlines()[0]
    assert first.startswith("error:")
    assert f"{bad}:5:" in first
    assert "rules[0].effect" in first
    assert "Traceback" not in err


def test_policy_check() -> None:
    code, out, _ = invoke("policy", "check", PACK)
    assert code == 0
    assert "agent-tools" in out
    assert "@attestation" in out
    assert "sha256:" in out
    code, out, _ = invoke("policy", "check", "--json", PACK)
    assert json.loads(out)["rules"] == 22


def test_policy_test_passes() -> None:
    code, out, _ = invoke("policy", "test", PACK, CASES)
    assert code == 0, out
    assert "92/92 cases passed" in out


def test_policy_test_fails_with_a_diff(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- name: wrong on purpose\n"
        "  request: {tool: fs.read, args: {path: /workspace/a}}\n"
        "  expect: {action: allow, reason_code: null}\n"
        "- name: right\n"
        "  line: 'not json'\n"
        "  expect: {action: deny, reason_code: input-rejected, matched_rule: '@request'}\n"
    )
    code, out, _ = invoke("policy", "test", PACK, str(cases))
    assert code == 1
    assert "FAIL wrong on purpose (line 1)" in out
    assert "- expected 'allow'" in out
    assert "+ actual   'deny'" in out
    assert "1/2 cases passed" in out


def test_policy_test_bad_case_file(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text("- name: x\n  request: {tool: a}\n  expect: {verdict: allow}\n")
    code, _, err = invoke("policy", "test", PACK, str(cases))
    assert code == 2
    assert f"{cases}:3" in err


def test_codes() -> None:
    code, out, _ = invoke("codes", "--json")
    assert code == 0
    rows = {row["code"]: row for row in json.loads(out)}
    assert set(rows) == {
        "policy-denied",
        "out-of-scope",
        "attestation-failed",
        "input-rejected",
        "unavailable",
        "approval-required",
        "rate-limited",
    }
    assert rows["unavailable"]["retryable"] is True
    assert rows["rate-limited"]["since"] == 2
    assert invoke("codes")[0] == 0


def test_demo_uses_the_default_keyring() -> None:
    code, out, err = invoke("demo")
    assert code == 0, out + err
    assert "created a new keyring" in err
    for word in ("policy-denied", "out-of-scope", "attestation-failed", "input-rejected"):
        assert f"one {word} refusal" in out
    assert "one unavailable refusal" in out
    assert invoke("demo")[0] == 0  # second run reuses the keyring


def test_keys_init_rotate_show(tmp_path: Path) -> None:
    path = tmp_path / "ring.json"
    assert invoke("keys", "init", str(path))[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ring = Keyring.load(path)
    code, _, err = invoke("keys", "init", str(path))  # an existing keyring is kept, and said so
    assert code == 0
    assert f"keyring {path} exists; kept it" in err
    assert Keyring.load(path).redaction_keys == ring.redaction_keys
    path.write_text("{}")
    assert invoke("keys", "init", str(path))[0] == 2  # one that does not load is no keyring
    assert invoke("keys", "init", str(path), "--force")[0] == 0
    assert Keyring.load(path).redaction_keys != ring.redaction_keys
    ring = Keyring.load(path)
    assert invoke("keys", "rotate", str(path))[0] == 0
    assert invoke("keys", "rotate", str(path), "--signing")[0] == 0
    rotated = Keyring.load(path)
    assert rotated.redaction_active == "k2"
    assert rotated.signing_active == signing_key_id(rotated.signing_keys[rotated.signing_active])
    assert rotated.signing_active not in ring.signing_keys
    assert rotated.redaction_keys["k1"] == ring.redaction_keys["k1"]  # old ids stay readable
    code, out, _ = invoke("keys", "show", "--json", str(path))
    assert code == 0
    info = json.loads(out)
    assert info["redaction"] == {"active": "k2", "key_ids": ["k1", "k2"]}
    assert set(info["signing"]["public_keys"]) == set(rotated.signing_keys)
    secret_material = [*rotated.redaction_keys.values(), *rotated.signing_keys.values()]
    shown = out + invoke("keys", "show", str(path))[1]
    for raw in secret_material:
        assert base64.b64encode(raw).decode() not in shown


@pytest.mark.slow
def test_console_script_in_a_real_process(tmp_path: Path, keyring_path: Path) -> None:
    script = shutil.which("refusalkit") or str(Path(sys.executable).parent / "refusalkit")
    env = {**os.environ, "REFUSALKIT_KEYRING": str(keyring_path)}
    with Path(REQUESTS).open("rb") as source:
        done = subprocess.run(
            [script, "decide", "--policy", PACK, "-"],
            stdin=source,
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    decisions = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(decisions) == 92
    bad = subprocess.run(
        [script, "decide", "--policy", str(tmp_path / "missing.yaml")],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
        text=True,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("error:")
    assert "Traceback" not in bad.stderr


def test_policy_test_unreadable_cases_file_blames_the_cases_file(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_bytes(b"- name: \xff\xfe\n")  # not UTF-8
    code, _, err = invoke("policy", "test", PACK, str(cases))
    assert code == 2
    assert "cannot read the cases file" in err
    assert "policy pack" not in err
    code, _, err = invoke("policy", "test", PACK, str(tmp_path / "missing.yaml"))
    assert code == 2
    assert "Check the path of the cases file" in err


def test_policy_test_malformed_cases_file_hints_at_the_cases_file(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text("- name: x\n  expect: {action: deny\n")  # unclosed flow mapping
    code, _, err = invoke("policy", "test", PACK, str(cases))
    assert code == 2
    assert str(cases) in err
    assert "Fix the cases file" in err
    assert "Fix the pack" not in err
