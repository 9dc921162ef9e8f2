"""What every CLI verb shares: consoles, the keyring option, and error reporting.

A ``RefusalkitError`` anywhere below a command is printed as ``error:`` + ``hint:`` on stderr and
exits with the error's code (2 for usage and input, 1 for failed verification); never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer._click import Context  # typer vendors click; its Context is the one passed
from typer.core import TyperGroup

from refusalkit.errors import RefusalkitError
from refusalkit.keyring import Keyring, default_keyring_path, resolve_keyring

__all__ = [
    "GuardedGroup",
    "KeyringOption",
    "err_console",
    "load_keyring",
    "out_console",
    "report_error",
]

out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

KeyringOption = Annotated[
    Path | None,
    typer.Option(
        "--keyring",
        envvar="REFUSALKIT_KEYRING",
        help="Keyring file (redaction and signing keys). Default: the one in your data directory.",
        show_default=False,
    ),
]


def report_error(exc: RefusalkitError) -> None:
    """Print an error and what to do about it, one line each, on stderr."""
    err_console.print(f"[bold red]error:[/] {exc.message}", markup=True, highlight=False)
    if exc.hint:
        err_console.print(f"[bold]hint:[/] {exc.hint}", markup=True, highlight=False)


def load_keyring(path: Path | None) -> Keyring:
    """The keyring the user chose, or the default one (created on first use, with a notice)."""
    created = path is None and not default_keyring_path().exists()
    ring, where = resolve_keyring(path, create=True)
    if created:
        err_console.print(f"created a new keyring at {where} (mode 0600)")
    return ring


class GuardedGroup(TyperGroup):
    """The top-level group: turns ``RefusalkitError`` into a message and an exit code."""

    def invoke(self, ctx: Context) -> Any:
        """Run the command; report refusalkit errors instead of a traceback."""
        try:
            return super().invoke(ctx)
        except RefusalkitError as exc:
            report_error(exc)
            sys.stderr.flush()
            raise typer.Exit(exc.exit_code) from None
