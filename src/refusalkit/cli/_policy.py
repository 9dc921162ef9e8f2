"""CLI verb group ``policy``: ``check`` a pack, ``lint`` it, ``test`` it against its cases.

Exit codes: 0 on success; 1 when ``policy test`` has a failing case or ``policy lint --strict``
a warning; 2 on a bad pack or bad usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, load_keyring, out_console
from refusalkit.cli._lint import print_warnings, run_lint
from refusalkit.decide import (
    DecisionPoint,
    explain,
    lint_pack,
    load_cases,
    load_pack,
    run_cases,
)
from refusalkit.keyring import Keyring

__all__ = ["policy_app"]

policy_app = typer.Typer(
    name="policy", help="Check policy packs and run their test cases.", no_args_is_help=True
)
app.add_typer(policy_app, name="policy")


@policy_app.command("check")
def policy_check(
    pack_path: Annotated[Path, typer.Argument(metavar="PACK", help="Policy pack (YAML or JSON).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Validate a pack and summarise it: rules, stages, classes, digest; then lint it."""
    pack, warnings = lint_pack(pack_path)
    summary = pack.summary()
    if as_json:
        lint = [warning.to_dict() for warning in warnings]
        typer.echo(json.dumps({**summary, "lint": lint}, indent=2))
        return
    table = Table(
        title=f"policy {summary['policy']} {summary['version']}: valid", title_justify="left"
    )
    table.add_column("item")
    table.add_column("value", overflow="fold")
    table.add_row("digest", summary["digest"])
    table.add_row("default", summary["default"])
    by_effect = ", ".join(f"{k} {v}" for k, v in summary["rules_by_effect"].items() if v)
    table.add_row("rules", f"{summary['rules']} ({by_effect or 'none'})")
    table.add_row("stages", " → ".join(summary["stages"]))
    classes = ", ".join(f"{k} ({v})" for k, v in summary["field_classes"].items())
    table.add_row("field classes", classes or "none (every value is redacted)")
    out_console.print(table)
    print_warnings(warnings)


@policy_app.command("lint")
def policy_lint(
    pack_path: Annotated[Path, typer.Argument(metavar="PACK", help="Policy pack (YAML or JSON).")],
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on any warning.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the warnings as JSON.")] = False,
) -> None:
    """Warn about rules that cannot do their job: never match, shadowed, broad, raw paths."""
    run_lint(pack_path, strict=strict, as_json=as_json)


@policy_app.command("test")
def policy_test(
    pack_path: Annotated[Path, typer.Argument(metavar="PACK", help="Policy pack (YAML or JSON).")],
    cases_path: Annotated[
        Path, typer.Argument(metavar="CASES", help="YAML list of request + expect cases.")
    ],
    keyring: KeyringOption = None,
) -> None:
    """Run a pack's test cases (like [bold]opa test[/]); exit 1 with a diff on any failure."""
    pack = load_pack(pack_path)
    cases = load_cases(cases_path)
    ring = Keyring.generate() if keyring is None else load_keyring(keyring)
    results = run_cases(DecisionPoint(pack, ring), cases)
    failed = [r for r in results if not r.passed]
    for result in failed:
        where = f" (line {result.case.source_line})" if result.case.source_line else ""
        out_console.print(Text(f"FAIL {result.case.name}{where}", style="bold red"))
        for key, expected, actual in result.diff:
            out_console.print(Text(f"  {key}:", style="bold"))
            out_console.print(Text(f"    - expected {expected!r}", style="red"))
            out_console.print(Text(f"    + actual   {actual!r}", style="green"))
        out_console.print(Text(explain(result.decision), style="dim"))
    passed = len(results) - len(failed)
    style = "bold green" if not failed else "bold red"
    out_console.print(Text(f"{passed}/{len(results)} cases passed", style=style))
    if failed:
        raise typer.Exit(1)
