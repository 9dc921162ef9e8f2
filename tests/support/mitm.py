"""A man in the middle on loopback: an HTTP proxy in front of a real service that can rewrite
what it forwards and what it answers, as an attacker on the path would."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

import httpx

__all__ = ["Exchange", "Mitm"]

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Exchange:
    """One request as forwarded and the answer as returned (either may be rewritten)."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    answer_headers: dict[str, str] | None = None
    answer: bytes = b""


Hook = Callable[[Exchange], None]


class Mitm:
    """``with Mitm(upstream) as mitm:`` ... ``mitm.url``; ``on_request`` may change what goes
    upstream, ``on_answer`` what comes back; ``seen`` holds every exchange."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.on_request: Hook | None = None
        self.on_answer: Hook | None = None
        self.seen: list[Exchange] = []
        self._http = httpx.Client(timeout=10)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        mitm = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._relay("GET")

            def do_POST(self) -> None:
                self._relay("POST")

            def _relay(self, method: str) -> None:
                size = int(self.headers.get("content-length") or 0)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                exchange = Exchange(self.path, headers, self.rfile.read(size))
                mitm.forward(method, exchange)
                self.send_response(exchange.status)
                for name, value in (exchange.answer_headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(exchange.answer)))
                self.end_headers()
                self.wfile.write(exchange.answer)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def forward(self, method: str, exchange: Exchange) -> None:
        """Send ``exchange`` upstream (rewritten by ``on_request``) and fill in the answer."""
        if self.on_request is not None:
            self.on_request(exchange)
        response = self._http.request(
            method, self.upstream + exchange.path, headers=exchange.headers, content=exchange.body
        )
        exchange.status, exchange.answer = response.status_code, response.content
        exchange.answer_headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in _HOP | {"content-encoding"}
        }
        if self.on_answer is not None:
            self.on_answer(exchange)
        self.seen.append(exchange)

    def __enter__(self) -> Mitm:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()
