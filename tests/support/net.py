"""Network helpers for tests that talk to loopback servers."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A loopback port that nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
