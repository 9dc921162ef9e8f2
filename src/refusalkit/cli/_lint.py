"""Printing lint warnings for ``policy check`` and ``policy lint`` (docs/policy.md, Lint).

``policy lint`` exits 0 (warnings or not), 1 with ``--strict`` when there is a warning, 2 for a
pack that does not load. ``policy check`` prints the same warnings, on stderr, after its summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from refusalkit.decide import LintWarning, lint_pack, lint_text

__all__ = ["print_warnings", "run_lint"]


def print_warnings(warnings: list[LintWarning], *, err: bool = True) -> None:
    """Each warning, then its hint, one per line (never wrapped: tools read them)."""
    for line in lint_text(warnings):
        typer.echo(line, err=err)


def run_lint(pack_path: Path, *, strict: bool, as_json: bool) -> None:
    """Lint ``pack_path`` and print the warnings (or JSON); exit 1 under ``strict`` if any."""
    _, warnings = lint_pack(pack_path)
    if as_json:
        typer.echo(json.dumps([w.to_dict() for w in warnings], indent=2))
    else:
        print_warnings(warnings, err=False)
        count = len(warnings)
        summary = "no warnings" if not count else f"{count} warning{'s' if count > 1 else ''}"
        typer.echo(f"{pack_path}: {summary}")
    if strict and warnings:
        raise typer.Exit(1)
