"""The CLI and the terminal: a reader that closes the pipe early changes no exit status; help
text follows the terminal's width; and the habits of the field (``decide --fail-on``, ``keys
token``) behave as documented. Real processes where the behaviour lives in the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import refusalkit.cli
from refusalkit.cli._terminal import reflow
from refusalkit.examples import example_path
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.provenance import CallableRunner, record_baseline, run_calibration, starter_set

REFUSALKIT = str(Path(sys.executable).with_name("refusalkit"))
PACK = str(example_path("agent-tools.yaml"))
REQUESTS = str(example_path("requests.jsonl"))
runner = CliRunner()


def _closed_early(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Run ``args`` with its output pipe closed before it writes, as ``| head -n 0`` does."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: every write meets EPIPE
    try:
        return subprocess.run(
            args, stdout=write, stderr=subprocess.PIPE, env=env, timeout=120, check=False
        )
    finally:
        os.close(write)


@pytest.fixture
def drifted(tmp_path: Path, keyring: Keyring) -> tuple[Path, Path]:
    """(a run, its baseline) that drifted: everything complied at baseline, everything refused
    now."""
    cache = tmp_path / "cache"
    before = run_calibration(
        starter_set(), CallableRunner(lambda t: "Sure.", model="m"), cache=cache
    )
    now = run_calibration(
        starter_set(), CallableRunner(lambda t: "I can't help with that.", model="m2"), cache=cache
    )
    with open_journal(tmp_path / "j.db", keyring) as journal:
        baseline = record_baseline(before, journal)
    return now.write(tmp_path / "now.json"), baseline.write(tmp_path / "baseline.json")


@pytest.mark.slow
def test_drift_exits_3_when_its_reader_leaves_early(
    drifted: tuple[Path, Path], keyring_path: Path
) -> None:
    run, baseline = drifted
    args = [REFUSALKIT, "calibrate", "drift", str(run), "--baseline", str(baseline)]
    done = _closed_early([*args, "--keyring", str(keyring_path)], dict(os.environ))
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 3, stderr  # as documented for drift, not 1 for a broken pipe
    assert "Traceback" not in stderr
    assert "BrokenPipeError" not in stderr


@pytest.mark.slow
def test_every_verb_keeps_its_status_when_the_pipe_closes(keyring_path: Path) -> None:
    env = {**os.environ, "REFUSALKIT_KEYRING": str(keyring_path)}
    for args, status in (
        (["codes"], 0),
        (["decide", "--policy", PACK, "--fail-on", "any", REQUESTS], 3),
        (["decide", "--policy", PACK, "--explain", REQUESTS], 0),
        (["policy", "check", "/no/such/pack.yaml"], 2),
    ):
        done = _closed_early([REFUSALKIT, *args], env)
        stderr = done.stderr.decode(errors="replace")
        assert done.returncode == status, (args, stderr)
        assert "Traceback" not in stderr, args


def test_help_follows_the_terminal_width() -> None:
    narrow = subprocess.run(
        [REFUSALKIT, "decide", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "60"},
        timeout=60,
        check=True,
    ).stdout
    lines = narrow.splitlines()
    assert all(len(line) <= 60 for line in lines)
    text = " ".join(" ".join(line.strip("│ ").split()) for line in lines)
    # the docstring's own line breaks are gone: the sentence reads through at any width
    assert "Exits 0 whatever the decisions (a malformed line is decided input-rejected)" in text


def test_reflow_joins_paragraph_lines_and_keeps_structure() -> None:
    text = "One line\nand its rest.\n\nA list:\n- first\n- second\n  indented\n"
    assert reflow(text) == "One line and its rest.\n\nA list:\n- first\n- second\n  indented\n"


def test_fail_on_gates_on_the_decisions_it_names(keyring_path: Path, tmp_path: Path) -> None:
    def run(fail_on: str, *lines: str) -> tuple[int, str]:
        source = tmp_path / "requests.jsonl"
        source.write_text("".join(line + "\n" for line in lines))
        args = ["decide", "-p", PACK, "--keyring", str(keyring_path), "--fail-on", fail_on]
        result = runner.invoke(refusalkit.cli.app, [*args, str(source)])
        return result.exit_code, result.stderr

    malformed = '{"tool": 7}'
    unattested = '{"tool": "fs.read", "args": {"path": "/workspace/a"}, "caller": {"agent": "x"}}'
    assert run("deny", malformed)[0] == 0  # the pack did not refuse it: the request is broken
    assert run("refuse", malformed)[0] == 3
    code, said = run("deny", malformed, unattested)
    assert code == 3
    assert "--fail-on deny: 1 decision(s) matched, the first on line 2" in said
    assert run("any", unattested)[0] == 3


def test_keys_token_is_the_token_a_trail_holds(keyring_path: Path) -> None:
    request = {"tool": "fs.write", "args": {"path": "/workspace/.env", "content": "x"}}
    result = runner.invoke(
        refusalkit.cli.app,
        ["decide", "-p", PACK, "--keyring", str(keyring_path)],
        input=json.dumps(request) + "\n",
    )
    assert result.exit_code == 0, result.output
    trail = json.loads(result.stdout)["why_trail"]
    held = {(s["field_class"], s["value"]) for s in trail if s.get("field") == "args.path"}
    for field_class, value in held:
        token = runner.invoke(
            refusalkit.cli.app,
            ["keys", "token", "/workspace/.env", "--class", field_class, "--keyring",
             str(keyring_path)],
        )  # fmt: skip
        assert token.exit_code == 0, token.output
        assert token.stdout.strip() == value
    other = runner.invoke(
        refusalkit.cli.app, ["keys", "token", "/workspace/.env", "--keyring", str(keyring_path)]
    )
    assert other.stdout.strip() not in {value for _, value in held}  # the class is keyed in
    missing = runner.invoke(refusalkit.cli.app, ["keys", "token", "x", "--key-id", "k9",
                                                 "--keyring", str(keyring_path)])  # fmt: skip
    assert missing.exit_code == 2
    assert "keys show" in missing.stderr
