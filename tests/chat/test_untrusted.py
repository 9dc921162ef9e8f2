"""Untrusted input never crashes the guard (docs/design/chat.md, "Untrusted input").

The model writes the articulation and the tool-call arguments, so a prompt injection controls
them. Each case drives the real ``refusalkit chat`` against the loopback OpenAI-compatible server:
the session goes on, the bad turn is refused typed (a tool call that cannot be checked is denied
``unavailable``), and every turn leaves a TurnEvent. Hypothesis then throws arbitrary text and
JSON at the guard: a verdict every time, and every record encodes (RFC 8785).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, ToolCall
from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._scrub import redact_text
from refusalkit.cli import app
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json
from support.openai_server import OpenAIServer, Raw, completion_bytes

DEEP = 1500
HOSTILE_ARGUMENTS = {  # the `arguments` string a model writes (JSON text inside JSON)
    "nan": '{"path": "/workspace/a", "n": NaN}',
    "infinity": '{"path": "/workspace/a", "n": -Infinity}',
    "huge": '{"path": "/workspace/a", "n": 1e400}',
    "huge-int": '{"path": "/workspace/a", "n": ' + "9" * 400 + "}",
    "surrogate": '{"path": "/workspace/\\ud800"}',
    "deep": '{"path": ' + "[" * DEEP + "]" * DEEP + "}",
    "deep-under-the-recursion-limit": '{"path": ' + "[" * 200 + "]" * 200 + "}",
}


def _tool_message(arguments: str) -> str:
    call = {"id": "c1", "type": "function", "function": {"name": "fs.write", "arguments": "@@"}}
    return json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}).replace(
        '"@@"', json.dumps(arguments)
    )


def _hostile_then_plain(first: bytes) -> Any:
    def reply(body: dict[str, Any]) -> str | Raw:
        if body["messages"][-1]["content"] == "go":
            return Raw(first)
        return "plain answer"

    return reply


def _chat(server: OpenAIServer, tmp_path: Path, keyring_path: Path, *extra: str) -> Any:
    log = tmp_path / "turns.jsonl"
    args = [
        *("chat", "--endpoint", server.base_url, "--model", "test-model"),
        *("--keyring", str(keyring_path), "--turn-log", str(log), "--show-verdicts", *extra),
    ]
    result = CliRunner().invoke(app, args, input="go\nthen?\n/exit\n")
    events = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    return result, events


def _safety(event: dict[str, Any], boundary: str) -> dict[str, Any]:
    return next(r for r in event["safety_verdict"]["results"] if r["id"] == boundary)


@pytest.mark.parametrize("case", sorted(HOSTILE_ARGUMENTS))
@pytest.mark.parametrize("with_policy", [False, True], ids=["no-policy", "policy"])
def test_hostile_tool_arguments_are_denied_and_the_session_goes_on(
    case: str, with_policy: bool, tmp_path: Path, keyring_path: Path
) -> None:
    body = completion_bytes(_tool_message(HOSTILE_ARGUMENTS[case]))
    extra = ("--policy", str(example_path("chat-tool-policy.json"))) if with_policy else ()
    with OpenAIServer(_hostile_then_plain(body)) as server:
        result, events = _chat(server, tmp_path, keyring_path, "--journal", "j.db", *extra)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert [e["selected"] for e in events] == ["refusal", "articulation"]
    assert events[0]["refusal"]["tags"] == ["safety:no_unauthorized_action"]
    assert "plain answer" in result.stdout  # the session went on
    evidence = _safety(events[0], "no_unauthorized_action")["evidence"]
    if with_policy:
        [summary] = evidence["decisions"]
        assert (summary["action"], summary["reason_code"]) == ("deny", "unavailable")
    else:
        assert evidence["unavailable"][0]["tool"] == "fs.write"


@pytest.mark.parametrize(
    "message",
    [
        '{"role": "assistant", "content": "half \\ud800 a pair"}',
        '{"role": "assistant", "content": "low \\udfff first"}',
    ],
)
def test_a_lone_surrogate_in_the_reply_gets_a_verdict(
    message: str, tmp_path: Path, keyring_path: Path
) -> None:
    with OpenAIServer(_hostile_then_plain(completion_bytes(message))) as server:
        result, events = _chat(server, tmp_path, keyring_path, "--journal", "j.db")
    assert result.exit_code == 0, result.output
    assert [e["selected"] for e in events] == ["articulation", "articulation"]
    assert "\ufffd" in result.stdout


def test_invalid_utf8_from_the_endpoint_gets_a_verdict(tmp_path: Path, keyring_path: Path) -> None:
    body = completion_bytes('{"role": "assistant", "content": "bytes: @@"}').replace(
        b"@@", b"\xff\xfe\xc3"
    )
    with OpenAIServer(_hostile_then_plain(body)) as server:
        result, events = _chat(server, tmp_path, keyring_path)
    assert result.exit_code == 0, result.output
    assert len(events) == 2
    assert "\ufffd" in result.stdout


def test_malformed_tool_calls_from_the_endpoint_are_denied(
    tmp_path: Path, keyring_path: Path
) -> None:
    message = '{"role": "assistant", "content": "x", "tool_calls": ["rm -rf /", 7]}'
    with OpenAIServer(_hostile_then_plain(completion_bytes(message))) as server:
        result, events = _chat(server, tmp_path, keyring_path)
    assert result.exit_code == 0, result.output
    assert events[0]["refusal"]["tags"] == ["safety:no_unauthorized_action"]


def test_invalid_utf8_and_lone_surrogates_typed_by_the_user(
    tmp_path: Path, keyring_path: Path
) -> None:
    """The real binary, real stdin bytes: an invalid byte and a surrogate-escaped one."""
    log = tmp_path / "turns.jsonl"
    with OpenAIServer(lambda body: "seen: " + body["messages"][-1]["content"]) as server:
        argv = [
            *(sys.executable, "-c", "from refusalkit.cli import main; main()"),
            *("chat", "--endpoint", server.base_url, "--model", "test-model"),
            *("--keyring", str(keyring_path), "--turn-log", str(log)),
        ]
        done = subprocess.run(
            argv,
            input=b"caf\xe9 \xed\xa0\x80\nhello\n/exit\n",
            capture_output=True,
            timeout=60,
            check=False,
            env={
                "PYTHONIOENCODING": "utf-8",  # strict UTF-8 on stdin, whatever the locale
                "PATH": "/usr/bin:/bin",
                "HOME": str(tmp_path),
                **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
            },
        )
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert b"seen: hello" in done.stdout
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2


def test_replay_of_a_transcript_with_hostile_values(tmp_path: Path, keyring_path: Path) -> None:
    lines = [
        '{"input": "a", "response": "ok", "tool_calls": [{"tool": "t", "args": {"n": NaN}}]}',
        '{"input": "b\\ud800", "response": "fine \\udc00"}',
        '{"input": "c", "response": "ok", "tool_calls": [{"tool": "t", "args": '
        + "[" * DEEP
        + "]" * DEEP
        + "}]}",
    ]
    source = tmp_path / "t.jsonl"
    source.write_bytes(("\n".join(lines) + "\n").encode() + b'{"input": "\xff", "response": "x"}\n')
    result = CliRunner().invoke(
        app, ["chat", "replay", str(source), "--keyring", str(keyring_path), "--format", "jsonl"]
    )
    assert "Traceback" not in result.output
    # the deeply nested line cannot even be read as JSON: refused as a turn, named, replay goes on
    assert result.exit_code == 0, result.output
    assert "t.jsonl:3: nested too deeply to read" in result.stderr
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["selected"] for r in rows] == ["refusal", "articulation", "refusal", "articulation"]
    source.write_bytes(
        ("\n".join(lines[:2]) + "\n").encode() + b'{"input": "\xff", "response": "x"}\n'
    )
    result = CliRunner().invoke(
        app, ["chat", "replay", str(source), "--keyring", str(keyring_path), "--format", "jsonl"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["selected"] for r in rows] == ["refusal", "articulation", "articulation"]


# -- hypothesis: arbitrary text and JSON -------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
TEXT = st.text(st.characters(codec=None, categories=None), max_size=300) | st.sampled_from(
    ["-----BEGIN RSA PRIVATE KEY-----\n", "\ud800", "AKIA" + "Q" * 16, "\x00" * 5, "=" * 90]
)


def _deepen(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    user=TEXT,
    reply=TEXT,
    args=JSON_VALUES,
    depth=st.sampled_from([0, 0, 70, 1200]),
    tool=st.text(max_size=20),
)
def test_the_guard_gives_a_verdict_for_any_text_and_json(
    user: str, reply: str, args: Any, depth: int, tool: str
) -> None:
    runtime = ChatRuntime()
    call = ToolCall(tool, {"v": _deepen(args, depth)})
    response = runtime.check(user, reply, [call])
    assert response.selected in ("articulation", "hedged", "refusal")
    wire = response.to_dict()
    canonical_json(wire)  # every record is encodable: journal, log and replay can hold it
    canonical_json(response.event.to_dict())
    if depth > 64 or _not_finite(args):
        assert "safety:no_unauthorized_action" in response.refusal_tags


def _not_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) > 2**53 - 1
    if isinstance(value, list):
        return any(_not_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    return False


@settings(max_examples=100, deadline=None)
@given(raw=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_arguments_string_parses_to_a_checkable_call(raw: str) -> None:
    call = ToolCall.from_openai({"function": {"name": "t", "arguments": raw}})
    canonical_json(call.to_dict())
    response = ChatRuntime().check("x", "ok", [call])
    canonical_json(response.to_dict())


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_the_detectors_read_any_text(text: str) -> None:
    """No exception, spans inside the text, and redaction leaves valid Unicode."""
    for finding in find_secrets(text) + find_private_data(text):
        assert 0 <= finding.start < finding.end <= len(text)
    redact_text(text, Keyring.generate().redactor()).encode("utf-8")


HOSTILE_TERMINAL = "Fine.\x1b[2J\x1b[H\x1b]52;c;cm0gLXJmIH4K\x1b\\ all\rgood\x9b31m"


def test_terminal_control_sequences_are_shown_not_obeyed(
    tmp_path: Path, keyring_path: Path
) -> None:
    """A reply cannot clear the screen, rewrite a line or write the clipboard (OSC 52)."""
    with OpenAIServer(lambda _body: HOSTILE_TERMINAL + " AKIAQ3EGRT5WZ7XK2LMN") as server:
        result, _events = _chat(server, tmp_path, keyring_path)
    assert result.exit_code == 0, result.output
    assert "\\x1b]52;c;" in result.output  # the withheld line shows it, escaped
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"input": "x", "response": HOSTILE_TERMINAL}) + "\n")
    table = CliRunner().invoke(
        app,
        ["chat", "replay", str(transcript), "--keyring", str(keyring_path), "--format", "table"],
    )
    assert table.exit_code == 0, table.output
    assert "\\x1b[2J" in table.stdout
    for output in (result.output, table.output):
        assert not any(c in output for c in "\x1b\r\x9b")
