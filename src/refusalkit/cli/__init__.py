"""The ``refusalkit`` command line: a thin layer over the library's parts.

Verbs live in one module per part (``_decide``, ``_journal``, ``_chat``, ``_calibrate``,
``_serve``, ``_mcp``); importing them registers them on ``app``.
"""

from __future__ import annotations

from refusalkit.cli import _calibrate, _chat, _decide, _journal, _mcp, _serve  # noqa: F401 (registers)
from refusalkit.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
