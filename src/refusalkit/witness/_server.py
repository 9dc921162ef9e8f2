"""The witness: C2SP tlog-witness ``add-checkpoint`` over HTTP, cosigning only consistent trees.

``Witness.add_checkpoint`` is the whole decision, as the spec orders it: 400 for a malformed body
or an old size above the checkpoint's, 404 for an unknown origin, 403 when no trusted log key
signed it (or a trusted key's signature fails), 409 with ``text/x.tlog.size`` when the old size is
not the size it last cosigned, 422 for a size-0 checkpoint without the empty root, a proof where
none belongs, a consistency proof that does not verify, or an equal size with another root; else
it records the checkpoint durably and answers 200 with its cosignature line. Check and record
hold one lock, so two requests never roll the state back (the spec's race).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

from refusalkit.errors import RefusalkitError, VerificationError
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

__all__ = ["Answer", "Witness", "make_server"]

EMPTY_ROOT = hashlib.sha256(b"").digest()  # RFC 9162 §2.1.1: the hash of an empty list

log = logging.getLogger("refusalkit.witness")
MAX_BODY = 64 * 1024


class Answer(NamedTuple):
    """An HTTP answer: status, content type and body."""

    status: int
    content_type: str
    body: bytes


def _text(status: int, message: str) -> Answer:
    return Answer(status, "text/plain; charset=utf-8", f"{message}\n".encode())


@dataclass
class Witness:
    """A witness over its directory; thread-safe."""

    directory: WitnessDir
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._name, self._key = self.directory.signing_key()

    def add_checkpoint(self, body: bytes) -> Answer:
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

    def _check_and_cosign(self, request: AddCheckpoint, checkpoint: Checkpoint) -> Answer:
        latest = self.directory.latest(checkpoint.origin)
        known = latest.size if latest else 0
        if request.old != known:
            return Answer(409, "text/x.tlog.size", f"{known}\n".encode())
        problem = _inconsistency(request, checkpoint, latest)
        if problem:
            log.warning("refused %s size %d: %s", checkpoint.origin, checkpoint.size, problem)
            return _text(422, problem)
        self.directory.remember(request.note)
        line = cosign(checkpoint.body(), self._name, self._key, int(self.clock()))
        return Answer(200, "text/plain; charset=utf-8", line.line().encode("utf-8"))


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


def _handler(witness: Witness) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the spec recommends
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

        def _send(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.info("%s %s", self.address_string(), format % args)

    return Handler


def make_server(witness: Witness, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server (one thread per connection) answering ``POST .../add-checkpoint``."""
    server = ThreadingHTTPServer((host, port), _handler(witness))
    server.daemon_threads = True
    return server
