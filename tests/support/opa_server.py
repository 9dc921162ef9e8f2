"""A loopback server that answers as OPA's Data API does (POST /v1/data/<path>).

It evaluates real Rego (regopy) and answers with OPA's documented shapes: ``200 {"result": …,
"decision_id": …, "provenance": …}``; ``200 {"decision_id": …}`` when the document is undefined
(no ``result``); ``500 {"code": "internal_error", "message": …}`` on an evaluation error; ``400``
for a body that is not ``{"input": …}``; ``404`` outside ``/v1/data``. Tests can slow it down or
force a status, to exercise timeouts and error answers.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import re2  # noqa: F401 (google-re2 loads before rego-cpp; see refusalkit.engines._rego)
import regopy

PROVENANCE = {
    "version": "1.4.2",
    "build_commit": "test",
    "build_timestamp": "2026-01-01T00:00:00Z",
    "build_hostname": "loopback",
    "bundles": {"authz": {"revision": "r7"}},
}


@dataclass
class OpaServer:
    """The server's state: its URL, what it was asked, and knobs for failures."""

    url: str = ""
    delay_s: float = 0.0
    status: int | None = None
    body: bytes | None = None
    seen: list[dict[str, Any]] = field(default_factory=list)


def _handler(modules: dict[str, str], state: OpaServer) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()
    interpreter = regopy.Interpreter()
    interpreter.strict_built_in_errors = True
    for name, text in modules.items():
        interpreter.add_module(name, text)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            time.sleep(state.delay_s)
            if state.status is not None or state.body is not None:
                self._send(state.status or 200, state.body or {"code": "forced"})
                return
            path, _, query = self.path.partition("?")
            if not path.startswith("/v1/data/"):
                self._send(404, {"code": "resource_not_found", "message": "not found"})
                return
            try:
                doc = json.loads(raw)
                value = doc["input"]
            except (ValueError, KeyError, TypeError):
                self._send(400, {"code": "invalid_parameter", "message": "bad body"})
                return
            state.seen.append({"path": path, "query": query, "input": value})
            rego_query = "data." + ".".join(path.removeprefix("/v1/data/").split("/"))
            with lock:
                interpreter.set_input(value)
                output = interpreter.query(rego_query)
            if not output.ok():
                self._send(500, {"code": "internal_error", "message": "eval error"})
                return
            answer: dict[str, Any] = {"decision_id": str(uuid.uuid4())}
            if "provenance=true" in query:
                answer["provenance"] = PROVENANCE
            results = output.results
            if results and results[0].expressions:
                answer["result"] = results[0].expressions[0]
            self._send(200, answer)

    return Handler


@contextmanager
def opa_server(modules: dict[str, str]) -> Iterator[OpaServer]:
    """Serve ``modules`` on 127.0.0.1 (a free port) for the duration of the block."""
    state = OpaServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(modules, state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
