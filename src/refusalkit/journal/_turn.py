"""Take turns at writing one SQLite journal across service processes.

SQLite lets one writer in at a time; a writer that finds the database locked sleeps and polls
(1, 2, 5, 10, ... ms, sqlite.org/c3ref/busy_timeout.html), so two processes that both append
non-stop hand the write lock over late and unevenly, and each waits out sleeps instead of
committing. With ``--workers N`` on one SQLite file, each worker's writer first takes an exclusive
``flock`` on a side file (``JOURNAL.writer-lock``); the kernel wakes the next waiter the moment
the lock is released. SQLite's own locking still guards the data: the turn only orders writers.
PostgreSQL needs no turn (its row lock queues waiters).

``flock`` is not fair: a writer that releases the lock and asks again at once (a busy writer
thread with its next group ready) usually gets it back before the woken waiter runs, and the
other process starved for 100-180 ms at a time (measured, two workers). So a writer first takes a
second lock, the gate (``JOURNAL.writer-gate``), and holds it only while it waits for the turn:
the waiter holds the gate while it waits, so the releasing writer blocks at the gate until the
waiter has had its turn. Two writers strictly alternate while both are busy.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover (not on POSIX: SQLite's busy handler alone)
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterTurn", "writer_turn"]


class WriterTurn:
    """An exclusive ``flock`` on ``path`` held while in the ``with`` block, taken through the
    gate: ``path`` with the suffix ``.writer-gate``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gate = path.with_suffix(".writer-gate")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._gate_fd = os.open(self.gate, os.O_RDWR | os.O_CREAT, 0o600)

    def __enter__(self) -> WriterTurn:
        fcntl.flock(self._gate_fd, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        finally:
            fcntl.flock(self._gate_fd, fcntl.LOCK_UN)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release the file descriptors."""
        os.close(self._fd)
        os.close(self._gate_fd)


def writer_turn(store: str, *, is_postgres: bool) -> WriterTurn | contextlib.nullcontext[None]:
    """The turn for ``store``'s writers: a ``WriterTurn`` for an SQLite file, else a no-op."""
    if is_postgres or fcntl is None:
        return contextlib.nullcontext()
    return WriterTurn(Path(f"{store}.writer-lock"))
