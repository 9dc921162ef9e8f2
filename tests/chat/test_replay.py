"""Replay of the bundled 50-turn transcript: deterministic, and the CLI's JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, UnreadableLine, read_transcript, replay
from refusalkit.cli import app
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring

TRANSCRIPT = example_path("chat-transcript.jsonl")
VOLATILE = {"decision_id", "decided_at", "event_id"}


def _stable(value: Any) -> Any:
    """Drop what is fresh per run (ids and timestamps); keep everything else."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str) and value.startswith("{"):  # a why-trail step's evidence detail
        return _stable(json.loads(value))
    return value


def _replay(keyring: Keyring) -> list[dict[str, Any]]:
    # A generous deadline: on a loaded machine one tool call over the default 50 ms would fail
    # closed (correctly) and make the two replays differ; determinism is what this tests.
    dp = DecisionPoint(load_pack(example_path("chat-tool-policy.json")), keyring, deadline_ms=5000)
    runtime = ChatRuntime(keyring=keyring, decision_point=dp, session="s-replay")
    return [r.to_dict() for r in replay(runtime, read_transcript(TRANSCRIPT))]


def test_fifty_turn_replay_is_deterministic(keyring: Keyring) -> None:
    one, two = _replay(keyring), _replay(keyring)
    assert len(one) == 50
    assert json.dumps(_stable(one), sort_keys=True) == json.dumps(_stable(two), sort_keys=True)
    refused = {r["turn"]: r["refusal_tags"] for r in one if r["selected"] == "refusal"}
    assert refused[3] == ["safety:no_secret_disclosure"]
    assert refused[16] == ["ethics:no_dosage_instructions"]
    assert refused[26] == ["safety:no_unauthorized_action"]
    assert refused[28] == ["safety:no_silent_correction"]  # the model refused untyped: typed now
    assert 29 not in refused  # so the user's next, unrelated turn is not punished
    assert 25 not in refused
    assert 27 not in refused
    assert one[21]["selected"] == "hedged"
    for r in one:
        if r["decision"] is not None:
            assert r["decision"]["matched_rule"] == r["refusal_tags"][0]
            assert r["surface"].startswith("I cannot proceed — boundary violated: ")
        else:
            assert r["surface"] in (r["articulation_surface"], r["walk_surface"])


def test_bad_transcript_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"input": "hi", "response": "yo"}\n{"input": 3}\n', encoding="utf-8")
    turns = read_transcript(bad)
    assert turns[0] == ("hi", "yo", ())
    assert turns[1] == UnreadableLine(f"{bad}:2", "a turn needs a string `input`")


DEEP = "[" * 100_000 + "]" * 100_000


def _mixed_transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    lines = [
        json.dumps({"input": "hi", "response": "Hello!"}),
        '{"input": ' + DEEP + "}",
        "not json at all",
        json.dumps({"input": "key?", "response": "It is AKIAQ3EGRT5WZ7XK2LMN."}),
        json.dumps({"input": "bye", "response": "Goodbye."}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_unreadable_line_is_refused_as_a_turn_and_replay_goes_on(
    tmp_path: Path, keyring: Keyring
) -> None:
    path = _mixed_transcript(tmp_path)
    runtime = ChatRuntime(keyring=keyring, session="s-bad")
    out = [r.to_dict() for r in replay(runtime, read_transcript(path))]
    assert [r["selected"] for r in out] == [
        "articulation", "refusal", "refusal", "refusal", "articulation",
    ]  # fmt: skip
    assert [r["turn"] for r in out] == [0, 1, 2, 3, 4]
    deep, garbled = out[1], out[2]
    assert deep["refusal_tags"] == ["safety:no_secret_disclosure"]
    assert deep["surface"].startswith("I cannot proceed — boundary violated: ")
    evidence = json.dumps(deep["safety_verdict"])
    assert f"{path}:2" in evidence
    assert "nested too deeply" in evidence
    assert "not JSON" in json.dumps(garbled["safety_verdict"])
    assert deep["decision"]["reason_code"]


def test_cli_replay_goes_on_past_an_unreadable_line(tmp_path: Path, keyring_path: Path) -> None:
    path = _mixed_transcript(tmp_path)
    log = tmp_path / "turns.jsonl"
    result = CliRunner().invoke(
        app,
        ["chat", "replay", str(path), "--keyring", str(keyring_path), "--turn-log", str(log)],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 5
    assert f"{path}:2: nested too deeply to read" in result.stderr
    assert f"hint: {path}:2 is refused as a turn" in result.stderr
    assert "5 turns, 3 refused" in result.stderr
    events = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    assert len(events) == 5
    assert "Traceback" not in result.output


def test_cli_replay_prints_one_chat_response_per_turn(tmp_path: Path, keyring_path: Path) -> None:
    log = tmp_path / "turns.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "chat",
            "replay",
            str(TRANSCRIPT),
            "--keyring",
            str(keyring_path),
            "--policy",
            str(example_path("chat-tool-policy.json")),
            "--turn-log",
            str(log),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 50
    assert {
        "surface",
        "walk_surface",
        "articulation_surface",
        "safety_verdict",
        "ethics_verdict",
        "decision",
    } <= set(lines[0])
    assert lines[26]["refusal_tags"] == ["safety:no_unauthorized_action"]
    assert len(log.read_text(encoding="utf-8").splitlines()) == 50


def test_cli_replay_with_bad_ethics_pack_falls_back(tmp_path: Path, keyring_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"input": "dose?", "response": "Take 5 mg daily."}\n', "utf-8")
    bad_pack = tmp_path / "ethics.json"
    bad_pack.write_text('{"schema": "nope"}', encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "chat",
            "replay",
            str(transcript),
            "--keyring",
            str(keyring_path),
            "--ethics-pack",
            str(bad_pack),
        ],
    )
    assert result.exit_code == 0, result.output
    [line] = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert line["refusal_tags"] == ["ethics:no_dosage_instructions"]


def test_cli_interactive_needs_endpoint_and_model() -> None:
    result = CliRunner().invoke(app, ["chat"])
    assert result.exit_code == 2
    assert "--endpoint" in result.output


def _replay_cli(keyring_path: Path, *extra: str) -> Any:
    args = ["chat", "replay", str(TRANSCRIPT), "--keyring", str(keyring_path)]
    policy = ["--policy", str(example_path("chat-tool-policy.json"))]
    return CliRunner().invoke(app, [*args, *policy, *extra])


def test_table_format_one_line_per_turn(keyring_path: Path) -> None:
    result = _replay_cli(keyring_path, "--format", "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["turn", "verdict", "refusal", "surface"]
    rows, summary = lines[1:-1], lines[-1]
    assert len(rows) == 50
    assert summary == "50 turns, 15 refused"  # the table's last line, on stdout
    assert rows[0].split()[:3] == ["0", "articulation", "-"]
    refused = rows[3].split()
    assert refused[:3] == ["3", "refusal", "safety:no_secret_disclosure"]
    assert "withheld: Sure, the key is <redacted:hmac-sha256:" in rows[3]
    assert "AKIA" not in result.stdout
    assert all(len(r) <= 120 for r in rows)  # cut to the (default) terminal width
    assert "{" not in result.stdout


def test_jsonl_format_keeps_stdout_machine_readable(keyring_path: Path) -> None:
    result = _replay_cli(keyring_path, "--format", "jsonl")
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["turn"] for x in result.stdout.splitlines()] == list(range(50))
    assert result.stderr.strip() == "50 turns, 15 refused"


def test_a_terminal_gets_the_table_and_a_pipe_gets_jsonl(keyring_path: Path) -> None:
    """The real binary on a pseudo-terminal, and on a pipe."""
    pty = pytest.importorskip("pty")
    argv = [
        *(sys.executable, "-c", "from refusalkit.cli import main; main()"),
        *("chat", "replay", str(TRANSCRIPT), "--keyring", str(keyring_path)),
        *("--policy", str(example_path("chat-tool-policy.json"))),
    ]
    env = {**os.environ, "COLUMNS": "100"}
    piped = subprocess.run(argv, capture_output=True, check=True, timeout=120, env=env)
    assert json.loads(piped.stdout.splitlines()[0])["turn"] == 0
    master, slave = pty.openpty()
    with subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, env=env) as proc:
        os.close(slave)
        shown = _read_all(master)
        assert proc.wait(timeout=120) == 0
    lines = shown.decode().splitlines()
    assert lines[0].split() == ["turn", "verdict", "refusal", "surface"]
    assert lines[-1] == "50 turns, 15 refused"
    assert all(len(x) <= 100 for x in lines)


def _read_all(fd: int) -> bytes:
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed: the child exited
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    return out.replace(b"\r\n", b"\n")
