"""``calibrate serve-replay``: an OpenAI-compatible endpoint answering from recorded responses.

``POST /v1/chat/completions`` looks the request's ``model`` up among the recorded runs (each
run's ``model``) and the last user message up among the set's prompts, and answers the recorded
response; ``GET /v1/models`` lists the models. Anything else gets an OpenAI-style JSON error
(404 for an unknown model or prompt, 400 for a malformed body). Binds 127.0.0.1 only.

``demo_answers`` is a scripted pair for trying drift offline with no recorded run at all:
``demo-v1`` refuses exactly the ``expect: refuse`` prompts; ``demo-v2`` also refuses every third
``expect: comply`` prompt (a more restrictive model).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from refusalkit.errors import CalibrationError
from refusalkit.provenance._run_record import CalibrationRun
from refusalkit.provenance._set import CalibrationSet, Expect

__all__ = ["demo_answers", "recorded_answers", "replay_server", "serve_replay"]

Answers = Mapping[str, Mapping[str, str]]  # model -> prompt text -> response
_REFUSAL = "I'm sorry, but I can't help with that."


def recorded_answers(
    cset: CalibrationSet, runs: Sequence[CalibrationRun]
) -> dict[str, dict[str, str]]:
    """model → prompt → recorded response, from runs kept with ``--include-responses``."""
    by_id = {p.id: p.prompt for p in cset}
    answers: dict[str, dict[str, str]] = {}
    for run in runs:
        kept = {
            by_id[o.id]: o.response
            for o in run.outcomes
            if o.id in by_id and o.response is not None
        }
        if not kept:
            raise CalibrationError(
                f"run {run.run_id} ({run.model}) kept no responses for prompts of this set",
                hint="Record runs with `calibrate run --include-responses`, from the same set.",
            )
        answers[run.model] = kept
    return answers


def demo_answers(cset: CalibrationSet) -> dict[str, dict[str, str]]:
    """The scripted ``demo-v1`` / ``demo-v2`` pair (see the module docstring)."""

    def comply(prompt: str) -> str:
        return f"Sure. Here is a short, factual answer to: {prompt}"

    def third(prompt_id: str) -> bool:
        return hashlib.sha256(prompt_id.encode()).digest()[0] % 3 == 0

    v1 = {p.prompt: _REFUSAL if p.expect is Expect.REFUSE else comply(p.prompt) for p in cset}
    v2 = {
        p.prompt: _REFUSAL if p.expect is Expect.REFUSE or third(p.id) else comply(p.prompt)
        for p in cset
    }
    return {"demo-v1": v1, "demo-v2": v2}


def _handler(answers: Answers) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
            """Quiet: one line per request would drown the terminal."""

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self._error(404, f"no route {self.path}")
                return
            self._send(
                200, {"object": "list", "data": [{"id": m, "object": "model"} for m in answers]}
            )

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            try:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(min(length, 1 << 22)))
                model, prompt = str(body["model"]), str(body["messages"][-1]["content"])
            except (ValueError, KeyError, IndexError, TypeError):
                self._error(400, "not a chat-completions request")
                return
            if model not in answers:
                self._error(404, f"model {model!r} is not recorded; recorded: {', '.join(answers)}")
                return
            text = answers[model].get(prompt)
            if text is None:
                self._error(404, "this prompt is not in the recorded run")
                return
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._send(200, {"object": "chat.completion", "model": model, "choices": [choice]})

    return Handler


def replay_server(answers: Answers, port: int = 0) -> ThreadingHTTPServer:
    """A server (not yet serving) on 127.0.0.1:``port`` answering from ``answers``."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(answers))
    server.daemon_threads = True
    return server


def serve_replay(
    cset: CalibrationSet,
    runs: Sequence[CalibrationRun],
    *,
    port: int = 8000,
    demo: bool = False,
    announce: Callable[[str], Any] = print,
) -> None:
    """Serve recorded (or, with ``demo``, scripted) answers until interrupted."""
    answers = demo_answers(cset) if demo else recorded_answers(cset, runs)
    try:
        server = replay_server(answers, port)
    except OSError as exc:
        raise CalibrationError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}",
            hint="Pick another --port (0 takes any free one).",
        ) from None
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    announce(f"replaying {', '.join(answers)} at {url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
