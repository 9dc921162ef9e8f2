"""``refusalkit policy lint PACK``: warnings about a valid pack (docs/policy.md, Lint).

Exit codes: 0 (warnings or not); 1 with ``--strict`` when there is a warning; 2 for a pack
that does not load. ``policy check`` prints the same warnings after its summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from refusalkit.cli._decide import policy_app
from refusalkit.decide import LintWarning, lint_pack, lint_text

__all__ = ["policy_lint", "print_warnings"]


def print_warnings(warnings: list[LintWarning], *, err: bool = True) -> None:
    """Each warning, then its hint, one per line (never wrapped: tools read them)."""
    for line in lint_text(warnings):
        typer.echo(line, err=err)


@policy_app.command("lint")
def policy_lint(
    pack_path: Annotated[Path, typer.Argument(metavar="PACK", help="Policy pack (YAML or JSON).")],
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on any warning.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the warnings as JSON.")] = False,
) -> None:
    """Warn about rules that cannot do their job: never match, shadowed, broad, raw paths."""
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
