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
    """Console-script entry point: help reflowed to the terminal, a closed output pipe survived
    (each command still exits with its documented status)."""
    from typer.main import get_command  # noqa: PLC0415

    from refusalkit.cli._terminal import reflow_help, tolerate_closed_output  # noqa: PLC0415

    tolerate_closed_output()
    command = get_command(app)
    reflow_help(command)
    command(prog_name="refusalkit")
