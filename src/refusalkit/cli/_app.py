"""The root ``refusalkit`` command; each part adds its verbs in its own module."""

from __future__ import annotations

import typer

from refusalkit.cli._common import GuardedGroup

__all__ = ["app"]

app = typer.Typer(
    name="refusalkit",
    cls=GuardedGroup,
    help="Structured refusals for AI agents: decide, journal, guard chats, watch refusal drift.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    if value:
        from refusalkit._version import __version__  # noqa: PLC0415 (only when asked)

        typer.echo(f"refusalkit {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Structured refusals for AI agents: decide, journal, guard chats, watch refusal drift."""
