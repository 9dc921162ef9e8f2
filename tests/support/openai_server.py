"""A real OpenAI-compatible chat-completions server on loopback, for tests and benchmarks.

It speaks just enough of the OpenAI HTTP API (``POST /v1/chat/completions``, ``GET /v1/models``)
for clients such as refusalkit's calibration runner and chat responder. Every chat request is
answered by a ``reply`` callable: it returns the assistant's text, or a :class:`Fault` to answer an
error status (429 with ``Retry-After``, 500, ...) after an optional delay. A ``delay_s`` longer than
the client's timeout simulates a timeout.

The server is a ``ThreadingHTTPServer`` with daemon threads and HTTP/1.1 keep-alive, bound to
127.0.0.1 on a free port; it handles dozens of concurrent connections. Use it as a context
manager::

    with OpenAIServer(lambda body: "Sure.") as server:
        httpx.post(f"{server.base_url}/chat/completions", json={...})
        assert len(server.requests) == 1
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Fault", "OpenAIServer", "Raw", "Reply", "completion_bytes"]


@dataclass(frozen=True)
class Fault:
    """An error answer: ``status`` (with ``Retry-After`` when set) after ``delay_s`` seconds."""

    status: int = 500
    retry_after: float | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class Raw:
    """A 200 answer whose body is these bytes, verbatim (a hostile or broken endpoint)."""

    body: bytes


Reply = Callable[[dict[str, Any]], "str | Fault | Raw"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    owner: OpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        """Stay quiet: tests read ``server.requests`` instead of logs."""

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(body).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            owner = self.server.owner
            models = [
                {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in owner.models
            ]
            self._send_json(200, {"object": "list", "data": models})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        raw = self._read_body()
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(
                404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            )
            return
        try:
            body = json.loads(raw)
        except ValueError as exc:
            body = f"bad JSON: {exc}"
        if not isinstance(body, dict):
            self._send_json(400, {"error": {"message": str(body), "type": "invalid_request_error"}})
            return
        self.server.owner._answer(self, body, {k.lower(): v for k, v in self.headers.items()})


class OpenAIServer:
    """A threaded OpenAI-compatible HTTP server on 127.0.0.1 answering with ``reply(body)``.

    ``latency_s`` is added before every answer (the server's own configured latency).
    ``requests`` lists the chat-completion request bodies received, in arrival order, and
    ``headers`` their HTTP headers (names lower-cased).
    """

    def __init__(
        self,
        reply: Reply,
        *,
        latency_s: float = 0.0,
        models: tuple[str, ...] = ("test-model",),
    ) -> None:
        self.reply = reply
        self.latency_s = latency_s
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # the HTTP headers of each request in ``requests``
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._server is None:
            raise RuntimeError("the server is not running")
        return int(self._server.server_address[1])

    def start(self) -> OpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _answer(self, handler: _Handler, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            seq = len(self.requests)
        try:
            answer = self.reply(body)
        except Exception as exc:  # a broken reply callable becomes a 500
            answer = Fault(status=500)
            error_text = f"reply callable raised {type(exc).__name__}: {exc}"
        else:
            error_text = ""
        if self.latency_s:
            time.sleep(self.latency_s)
        if isinstance(answer, Fault):
            self._send_fault(handler, answer, error_text)
            return
        if isinstance(answer, Raw):
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                handler._send_bytes(200, answer.body)
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up
            handler._send_json(200, _completion(body, answer, seq))

    @staticmethod
    def _send_fault(handler: _Handler, fault: Fault, error_text: str) -> None:
        if fault.delay_s:
            time.sleep(fault.delay_s)
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = f"{fault.retry_after:g}"
        message = error_text or f"injected fault {fault.status}"
        kind = "rate_limit_error" if fault.status == 429 else "server_error"
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a simulated timeout
            handler._send_json(fault.status, {"error": {"message": message, "type": kind}}, headers)


def _completion(body: dict[str, Any], text: str, seq: int) -> dict[str, Any]:
    prompt_chars = sum(
        len(str(m.get("content", ""))) for m in body.get("messages", []) if isinstance(m, dict)
    )
    return {
        "id": f"chatcmpl-test-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "test-model")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": max(1, prompt_chars // 4),
            "completion_tokens": max(1, len(text) // 4),
            "total_tokens": max(1, prompt_chars // 4) + max(1, len(text) // 4),
        },
    }


def completion_bytes(message_json: str) -> bytes:
    """A chat-completion body around ``message_json`` (the ``message`` object's JSON text, written
    by hand so it can hold what ``json.dumps`` would refuse: NaN, lone surrogates, deep nesting)."""
    head = '{"id":"chatcmpl-raw","object":"chat.completion","created":0,"model":"test-model",'
    return (
        head + '"choices":[{"index":0,"finish_reason":"stop","message":' + message_json + "}]}"
    ).encode("utf-8", "surrogatepass")
