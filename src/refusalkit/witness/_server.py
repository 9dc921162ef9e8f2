"""The witness: C2SP tlog-witness ``add-checkpoint`` over HTTP, cosigning only consistent trees.

``Witness.add_checkpoint`` is the whole decision, as the spec orders it: 400 for a malformed body
or an old size above the checkpoint's, 404 for an unknown origin, 403 when no trusted log key
signed it (or a trusted key's signature fails), 409 with ``text/x.tlog.size`` when the old size is
not the size it last cosigned, 422 for a size-0 checkpoint without the empty root, a proof where
none belongs, a consistency proof that does not verify, or an equal size with another root; else
it records the checkpoint durably and answers 200 with its cosignature line. Check and record
hold one lock, so two requests never roll the state back (the spec's race); across processes,
``make_server`` holds an exclusive ``flock`` on ``DIR/serve.lock`` for the server's life, so a
second server on the same directory refuses to start (two would cosign both sides of a fork).

The server bounds what a client can hold: each connection has a read timeout (an idle or slow
connection is closed), and at most ``max_connections`` are served at once, one thread each; a
connection beyond the cap gets ``503`` at once, so idle connections cannot starve an honest
``add-checkpoint``.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

from refusalkit.errors import RefusalkitError, UsageError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    open_checkpoint,
    parse_checkpoint_body,
    parse_note,
    verify_consistency,
)
from refusalkit.witness._cosignature import cosign
from refusalkit.witness._request import AddCheckpoint, RequestFormatError
from refusalkit.witness._state import WitnessDir

__all__ = ["HttpAnswer", "Witness", "make_server"]

EMPTY_ROOT = hashlib.sha256(b"").digest()  # RFC 9162 §2.1.1: the hash of an empty list

log = logging.getLogger("refusalkit.witness")
MAX_BODY = 64 * 1024
READ_TIMEOUT = 10.0
MAX_CONNECTIONS = 64
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 31\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    b"too many connections; try again\n"
)


class HttpAnswer(NamedTuple):
    """An HTTP answer: status, content type and body."""

    status: int
    content_type: str
    body: bytes


def _text(status: int, message: str) -> HttpAnswer:
    return HttpAnswer(status, "text/plain; charset=utf-8", f"{message}\n".encode())


@dataclass
class Witness:
    """A witness over its directory; thread-safe."""

    directory: WitnessDir
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._name, self._key = self.directory.signing_key()

    def add_checkpoint(self, body: bytes) -> HttpAnswer:
        """Decide one ``add-checkpoint`` request (C2SP tlog-witness)."""
        try:
            request = AddCheckpoint.parse(body)
            checkpoint = parse_checkpoint_body(parse_note(request.note)[0])
        except (RequestFormatError, VerificationError) as exc:
            return _text(400, exc.message)
        if request.old > checkpoint.size:
            return _text(400, f"old size {request.old} exceeds the checkpoint size")
        trusted = self.directory.logs().get(checkpoint.origin)
        if trusted is None:
            return _text(404, f"unknown log origin {checkpoint.origin!r}")
        try:
            open_checkpoint(request.note, trusted, origin=checkpoint.origin)
        except VerificationError as exc:
            return _text(403, exc.message)
        with self._lock:
            return self._check_and_cosign(request, checkpoint)

    def _check_and_cosign(self, request: AddCheckpoint, checkpoint: Checkpoint) -> HttpAnswer:
        latest = self.directory.latest(checkpoint.origin)
        known = latest.size if latest else 0
        if request.old != known:
            return HttpAnswer(409, "text/x.tlog.size", f"{known}\n".encode())
        problem = _inconsistency(request, checkpoint, latest)
        if problem:
            log.warning("refused %s size %d: %s", checkpoint.origin, checkpoint.size, problem)
            return _text(422, problem)
        self.directory.remember(request.note)
        line = cosign(checkpoint.body(), self._name, self._key, int(self.clock()))
        return HttpAnswer(200, "text/plain; charset=utf-8", line.line().encode("utf-8"))


def _inconsistency(
    request: AddCheckpoint, checkpoint: Checkpoint, latest: Checkpoint | None
) -> str | None:
    """Why ``checkpoint`` may not follow ``latest`` (None: it may)."""
    if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
        return "a checkpoint of size 0 must have the empty tree's root"
    if latest is None or request.old == 0:
        return "the old size is 0, so the proof must be empty" if request.proof else None
    try:
        verify_consistency(
            latest.size, checkpoint.size, request.proof, latest.root, checkpoint.root
        )
    except VerificationError as exc:
        return f"not consistent with the size-{latest.size} checkpoint cosigned: {exc.message}"
    return None


def _handler(witness: Witness, read_timeout: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the spec recommends
        timeout = read_timeout  # StreamRequestHandler: a socket timeout for every read
        # one write per answer and no Nagle: headers and body in separate segments would wait
        # for the client's delayed ACK (~40 ms a round trip on Linux)
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            if self.path.rstrip("/").rsplit("/", 1)[-1] != "add-checkpoint":
                self._send(_text(404, "only POST /add-checkpoint is served"))
                return
            declared = self.headers.get("Content-Length") or "0"
            length = int(declared) if declared.isdigit() else 0
            if not 0 < length <= MAX_BODY:
                self._send(_text(400, f"a body of 1 to {MAX_BODY} bytes is required"))
                return
            try:
                answer = witness.add_checkpoint(self.rfile.read(length))
            except RefusalkitError as exc:  # the witness's own files: an incident, not the caller
                log.error("cannot answer: %s", exc.message)  # noqa: TRY400
                answer = _text(500, "the witness cannot answer now")
            self._send(answer)

        def _send(self, answer: HttpAnswer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.info("%s %s", self.address_string(), format % args)

    return Handler


def _lock_directory(witness: Witness) -> int:
    """Hold ``DIR/serve.lock`` exclusively (non-blocking); a second server refuses to start."""
    path = witness.directory.root / "serve.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            f"another witness process serves {witness.directory.root} (it holds {path})",
            hint="Run one `refusalkit witness serve` per directory: two would each cosign one "
            "side of a fork. Stop the other, or give this one its own directory and key.",
        ) from None
    return fd


class WitnessServer(ThreadingHTTPServer):
    """A threading HTTP server with a cap on concurrent connections (one thread each) and the
    witness directory's inter-process lock, released by ``server_close``."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: Any, lock_fd: int, max_connections: int
    ) -> None:
        self._lock_fd = lock_fd
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve on a thread while a slot is free; else answer 503 and close at once."""
        if not self._slots.acquire(blocking=False):
            log.warning("connection cap reached: refused %s", client_address)
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """One connection's thread; frees its slot when the connection ends."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def server_close(self) -> None:
        """Close the socket and release the directory lock."""
        super().server_close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def make_server(
    witness: Witness,
    host: str,
    port: int,
    *,
    read_timeout: float = READ_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> WitnessServer:
    """An HTTP server answering ``POST .../add-checkpoint``: one thread per connection, at most
    ``max_connections`` at once, ``read_timeout`` seconds per read; holds the directory's lock
    (``UsageError`` when another server holds it)."""
    fd = _lock_directory(witness)
    try:
        return WitnessServer((host, port), _handler(witness, read_timeout), fd, max_connections)
    except BaseException:
        os.close(fd)
        raise
