"""The endpoint responder against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, EndpointResponder
from refusalkit.cli import app
from refusalkit.errors import ResponderError
from refusalkit.model import TYPED_REFUSAL_PREFIX
from support.openai_server import Fault, OpenAIServer


def _reply(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    if "withheld" in last:  # the re-articulation note
        return "Credentials are in the team vault; ask an admin."
    if "key" in last:
        return "The key is AKIAQ3EGRT5WZ7XK2LMN."
    return f"You said: {last}"


def test_endpoint_responder_is_guarded_like_any_responder() -> None:
    with OpenAIServer(_reply) as server:
        responder = EndpointResponder(server.base_url, "test-model", timeout=5)
        runtime = ChatRuntime(responder, rearticulate=True)
        ordinary = runtime.turn("hello")
        refused = ChatRuntime(responder).turn("what is the key?")
        retried = runtime.turn("what is the key?")
        responder.close()
        assert server.requests[0]["model"] == "test-model"
        assert server.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}
    assert ordinary.surface == "You said: hello"
    assert refused.surface == TYPED_REFUSAL_PREFIX + "safety:no_secret_disclosure"
    assert refused.articulation_surface == "The key is AKIAQ3EGRT5WZ7XK2LMN."
    assert retried.selected == "retry"
    assert retried.surface == "Credentials are in the team vault; ask an admin."


def test_endpoint_errors_become_responder_errors() -> None:
    with OpenAIServer(lambda _body: Fault(status=503, retry_after=0)) as server:
        responder = EndpointResponder(server.base_url, "test-model", timeout=5)
        with pytest.raises(ResponderError, match="503"):
            responder([{"role": "user", "content": "hi"}])
        assert len(server.requests) == 2  # one retry on 5xx
    with OpenAIServer(lambda _body: Fault(status=200, delay_s=2.0)) as server:
        slow = EndpointResponder(server.base_url, "test-model", timeout=0.3)
        with pytest.raises(ResponderError, match="Timeout"):
            slow([{"role": "user", "content": "hi"}])


def test_cli_interactive_session(tmp_path: Path, keyring_path: Path) -> None:
    log = tmp_path / "turns.jsonl"
    with OpenAIServer(_reply) as server:
        result = CliRunner().invoke(
            app,
            [
                "chat",
                "--endpoint",
                server.base_url,
                "--model",
                "test-model",
                "--keyring",
                str(keyring_path),
                "--show-verdicts",
                "--turn-log",
                str(log),
            ],
            input="hello\nwhat is the key?\n/exit\n",
        )
    assert result.exit_code == 0, result.output
    assert "You said: hello" in result.stdout
    assert TYPED_REFUSAL_PREFIX + "safety:no_secret_disclosure" in result.stdout
    assert "safety:no_secret_disclosure: VIOLATED" in result.output
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2


def test_cli_interactive_exits_2_when_the_endpoint_is_unreachable(
    tmp_path: Path, keyring_path: Path
) -> None:
    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "turns.jsonl"
    result = CliRunner().invoke(
        app,
        [
            *("chat", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m"),
            *("--keyring", str(keyring_path), "--turn-log", str(log)),
        ],
        input="hello\nnever asked\n",
    )
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr
    assert "ConnectError" in result.stderr
    assert "hint:" in result.stderr
    [event] = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert event["selected"] == "error"  # the failed turn is still recorded
