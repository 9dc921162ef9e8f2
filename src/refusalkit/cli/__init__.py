"""The ``refusalkit`` command line: a thin layer over the library's parts.

Verbs live in one module per part (``_decide``, ``_journal``, ``_chat``, ``_calibrate``,
``_serve``, ``_mcp``); importing them registers them on ``app``.
"""

from __future__ import annotations

from refusalkit.cli import (  # noqa: F401 (each module registers its verbs)
    _calibrate,
    _chat,
    _decide,
    _demo,
    _example_token,
    _journal,
    _keys,
    _mcp,
    _mcp_install,
    _mcp_pin,
    _policy,
    _serve,
    _witness,
)
from refusalkit.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
