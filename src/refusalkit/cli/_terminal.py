"""What the CLI does for the terminal: outlive a reader that goes away, reflow help text.

A reader that closes the pipe early (``refusalkit calibrate drift ... | head``) must not change a
command's exit status: ``drift`` exits 3 on drift whether or not anyone read the report. So the
standard streams are wrapped once, at the entry point: the first write that meets a closed pipe
(EPIPE) points the file descriptor at ``/dev/null`` and the command goes on to its documented
exit code, printing nothing more and no traceback. A command that streams without end (``decide``)
asks ``output_closed()`` and stops early instead.

Help text is written as docstrings, wrapped at 100 columns in the source; typer's rich mode keeps
those line breaks, so a terminal of another width got lines broken mid-sentence. ``reflow_help``
joins the lines of each paragraph, and rich wraps them at the terminal's width, at word boundaries.
"""

from __future__ import annotations

import io
import os
import re
import sys
from typing import Any

__all__ = ["output_closed", "reflow", "reflow_help", "tolerate_closed_output"]

_closed: set[int] = set()


class _TolerantRaw(io.RawIOBase):
    """A raw writer on a file descriptor that, on EPIPE, writes to ``/dev/null`` from then on."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        view = memoryview(data)
        if self._fd in _closed:
            return len(view)
        try:
            return os.write(self._fd, view)
        except BrokenPipeError:
            _closed.add(self._fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._fd)
            os.close(devnull)
            return len(view)


def _tolerant(stream: Any) -> Any:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream  # not a real file (a test runner's capture): leave it
    buffered = io.BufferedWriter(_TolerantRaw(fd))
    return io.TextIOWrapper(
        buffered,
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering or stream.isatty(),
        write_through=stream is sys.stderr,
    )


def tolerate_closed_output() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` so that a closed pipe ends output, not the command."""
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout = _tolerant(sys.stdout)
    sys.stderr = _tolerant(sys.stderr)


def output_closed() -> bool:
    """Whether the reader of standard output has gone away (only after a write found out)."""
    return 1 in _closed


_BREAK = re.compile(r"(?<=\S)[ \t]*\n(?![ \t]*(?:\n|[-*•]\s|\d+[.)]\s|\s|$))[ \t]*")


def reflow(text: str) -> str:
    """``text`` with the line breaks inside each paragraph made spaces; blank lines, list items
    and indented lines keep their breaks."""
    return _BREAK.sub(" ", text)


def reflow_help(command: Any) -> None:
    """Reflow the help of ``command`` and of every sub-command and option below it (click
    objects, as typer builds them)."""
    if getattr(command, "help", None):
        command.help = reflow(command.help)
    for param in getattr(command, "params", ()):
        if getattr(param, "help", None):
            param.help = reflow(param.help)
    for child in getattr(command, "commands", {}).values():
        reflow_help(child)
