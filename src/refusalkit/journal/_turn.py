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

A turn with a bound (``wait_s``: the in-process enforcer, whose leading caller commits on its own
thread) does not block on the kernel: it tries each lock without waiting and, while another
process holds it, retries after pauses of 0.1 ms doubling to 5 ms, until the bound has passed;
then ``StoreError``, and the group's callers fail closed. A process that takes the side file and
keeps it (stuck, or hostile) cannot hold a decision back past its bound.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from types import TracebackType

from refusalkit.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover (not on POSIX: SQLite's busy handler alone)
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterTurn", "writer_turn"]


_FIRST_PAUSE_S, _LAST_PAUSE_S = 0.0001, 0.005


class WriterTurn:
    """An exclusive ``flock`` on ``path`` held while in the ``with`` block, taken through the
    gate: ``path`` with the suffix ``.writer-gate``; waited for at most ``wait_s`` seconds
    when given (``StoreError`` past it), else for as long as it takes."""

    def __init__(self, path: Path, wait_s: float | None = None) -> None:
        self.path = path
        self.gate = path.with_suffix(".writer-gate")
        self.wait_s = wait_s
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._gate_fd = os.open(self.gate, os.O_RDWR | os.O_CREAT, 0o600)

    def __enter__(self) -> WriterTurn:
        deadline = None if self.wait_s is None else time.monotonic() + self.wait_s
        self._take(self._gate_fd, deadline)
        try:
            self._take(self._fd, deadline)
        finally:
            fcntl.flock(self._gate_fd, fcntl.LOCK_UN)
        return self

    def _take(self, fd: int, deadline: float | None) -> None:
        """An exclusive lock on ``fd``: blocking without a deadline, else retried until it."""
        if deadline is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        pause = _FIRST_PAUSE_S
        while not _took(fd):
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._held()
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LAST_PAUSE_S)

    def _held(self) -> StoreError:
        return StoreError(
            f"the journal's writer turn ({self.path}) was held by another process for more "
            f"than {self.wait_s:g} s",
            hint="Find the process that holds it (`fuser` on the file) and stop it, or give "
            "each process its own journal.",
        )

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release the file descriptors."""
        os.close(self._fd)
        os.close(self._gate_fd)


def _took(fd: int) -> bool:
    """Whether an exclusive lock on ``fd`` was taken without waiting (False: it is held)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def writer_turn(
    store: str, *, is_postgres: bool, wait_s: float | None = None
) -> WriterTurn | contextlib.nullcontext[None]:
    """The turn for ``store``'s writers: a ``WriterTurn`` for an SQLite file (waited for at
    most ``wait_s`` seconds when given), else a no-op."""
    if is_postgres or fcntl is None:
        return contextlib.nullcontext()
    return WriterTurn(Path(f"{store}.writer-lock"), wait_s)
