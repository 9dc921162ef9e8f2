"""Replay of the bundled 50-turn transcript: deterministic, and the CLI's JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, read_transcript, replay
from refusalkit.cli import app
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import UsageError
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
    dp = DecisionPoint(load_pack(example_path("chat-tool-policy.json")), keyring)
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
    with pytest.raises(UsageError, match=r"t\.jsonl:2"):
        read_transcript(bad)


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
