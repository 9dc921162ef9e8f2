"""The leak invariant over every surface, for every kind in the detection corpus.

docs/design/chat-guard.md, "The leak invariant": when the guard refuses because of a secret or
personal data, no surface that leaves the runtime holds any 8-character run of it: the terminal's
withheld line (``--show-verdicts``), replay output (JSONL and table), TurnEvents (turn log), the
journal, logs and telemetry. ``tests/vectors/detect-sample.jsonl`` holds one case per kind of the
benchmark corpus (``bench/detect_corpus.py``) plus its awkward shapes: armoured keys without END,
quoted, indented, escaped or with headers; tokens split over lines, spaced, upper- or
lower-cased or base64-wrapped.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, LogRefusalSink, OtelRefusalSink
from refusalkit.cli import app
from refusalkit.keyring import Keyring
from support.openai_server import OpenAIServer

SAMPLE = Path(__file__).resolve().parent.parent / "vectors" / "detect-sample.jsonl"
CASES = [json.loads(x) for x in SAMPLE.read_text("utf-8").splitlines() if x.strip()]


def runs(secret: str) -> set[str]:
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def leaked(surface: str) -> list[str]:
    """The cases (kind/variant) any of whose 8-character runs occur in ``surface``."""
    return [
        f"{c['kind']}/{c['variant']}" for c in CASES if any(r in surface for r in runs(c["secret"]))
    ]


def stored(path: Path) -> str:
    return path.read_bytes().decode("latin-1")


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"input": f"case {i}", "response": c["text"]}) for i, c in enumerate(CASES)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def test_the_sample_covers_every_kind_of_the_corpus() -> None:
    kinds = {c["kind"] for c in CASES}
    assert len(kinds) >= 25
    assert all(len(c["secret"]) >= 8 for c in CASES)
    assert leaked("\n".join(c["text"] for c in CASES))  # the check can see a leak


@pytest.mark.parametrize("fmt", ["jsonl", "table"])
def test_replay_turn_log_and_journal(
    fmt: str, transcript: Path, tmp_path: Path, keyring_path: Path
) -> None:
    log, store = tmp_path / f"turns-{fmt}.jsonl", tmp_path / f"journal-{fmt}.db"
    args = ["chat", "replay", str(transcript), "--keyring", str(keyring_path), "--format", fmt]
    result = CliRunner().invoke(app, [*args, "--turn-log", str(log), "--journal", str(store)])
    assert result.exit_code == 0, result.output
    events = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    not_refused = [
        f"{c['kind']}/{c['variant']}"
        for c, e in zip(CASES, events, strict=True)
        if e["selected"] != "refusal"
    ]
    assert not_refused == []
    assert leaked(result.output) == []
    assert leaked(stored(log)) == []
    assert leaked(stored(store)) == []


def test_record_text_is_the_only_way_raw_text_leaves(transcript: Path, keyring_path: Path) -> None:
    args = ["chat", "replay", str(transcript), "--keyring", str(keyring_path), "--format", "jsonl"]
    result = CliRunner().invoke(app, [*args, "--record-text"])
    assert result.exit_code == 0, result.output
    assert len(leaked(result.output)) == len(CASES)


def test_show_verdicts_withheld_lines(tmp_path: Path, keyring_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str:
        return str(CASES[int(body["messages"][-1]["content"].split()[-1])]["text"])

    lines = "".join(f"case {i}\n" for i in range(len(CASES))) + "/exit\n"
    with OpenAIServer(reply) as server:
        result = CliRunner().invoke(
            app,
            [
                *("chat", "--endpoint", server.base_url, "--model", "test-model"),
                *("--keyring", str(keyring_path), "--show-verdicts"),
            ],
            input=lines,
        )
    assert result.exit_code == 0, result.output
    assert result.output.count("withheld:") == len(CASES)
    assert leaked(result.output) == []


def test_events_logs_and_telemetry(
    provider: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    sinks = [LogRefusalSink(), OtelRefusalSink(tracer_provider=provider)]
    runtime = ChatRuntime(keyring=Keyring.generate(), sinks=sinks, turn_log=tmp_path / "t.jsonl")
    out = []
    for i, case in enumerate(CASES):
        response = runtime.check(f"case {i}", case["text"])
        assert response.refused, f"{case['kind']}/{case['variant']}"
        out += [json.dumps(response.to_dict()), json.dumps(response.event.to_dict())]
        out += [json.dumps(response.decision.to_dict() if response.decision else None)]
    spans = provider.exporter.get_finished_spans()
    telemetry = json.dumps([dict(e.attributes) for s in spans for e in s.events], default=str)
    assert len(spans) == len(CASES)
    assert leaked("\n".join(out)) == []
    assert leaked(caplog.text) == []
    assert leaked(telemetry) == []
