"""CLI verbs of the decision point: ``decide``, ``policy``, ``codes``, ``demo`` and ``keys``.

Exit codes: 0 on success whatever the decisions; 1 when ``policy test`` has a failing case;
2 on bad usage, a bad pack or a bad keyring (a one-line ``error:`` and a ``hint:``).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import platformdirs
import typer
from rich.table import Table
from rich.text import Text

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, err_console, load_keyring, out_console
from refusalkit.cli._engines import (
    CedarEntitiesOption,
    CedarSchemaOption,
    EngineOption,
    MappingOption,
    QueryOption,
    decider,
    engine_spec,
)
from refusalkit.decide import (
    DecisionPoint,
    Pack,
    decide_lines,
    explain,
    load_cases,
    load_pack,
    run_cases,
)
from refusalkit.errors import KeyringError, UsageError
from refusalkit.examples import example_path
from refusalkit.journal import Journal, open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import REASON_CODES_VERSION, Decision, ReasonCode

__all__ = ["app", "demo_decisions"]

policy_app = typer.Typer(
    name="policy", help="Check policy packs and run their test cases.", no_args_is_help=True
)
keys_app = typer.Typer(
    name="keys",
    help="Create, rotate and inspect keyrings (redaction and signing keys).",
    no_args_is_help=True,
)
app.add_typer(policy_app, name="policy")
app.add_typer(keys_app, name="keys")

PolicyOption = Annotated[
    Path,
    typer.Option("--policy", "-p", help="Policy pack (YAML or JSON).", show_default=False),
]
JournalOption = Annotated[
    str | None,
    typer.Option(
        "--journal",
        help="Append every decision to this journal (SQLite file or postgresql:// URL); "
        "a decision is printed only once it is durable there.",
        show_default=False,
    ),
]
JOURNAL_BATCH = 1000
JOURNAL_LATENCY_S = 0.2

DeadlineOption = Annotated[
    float,
    typer.Option("--deadline-ms", help="Per-decision deadline; an overrun fails closed.", min=0.1),
]


@contextmanager
def _open_input(source: str) -> Iterator[IO[bytes]]:
    if source == "-":
        yield sys.stdin.buffer
        return
    path = Path(source)
    try:
        handle = path.open("rb")
    except FileNotFoundError as exc:
        raise UsageError(
            f"no such file: {source}", hint="Give a JSONL file, or - for stdin."
        ) from exc
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}") from exc
    with handle:
        yield handle


def _write_decision(decision: Decision, out: IO[str]) -> None:
    out.write(json.dumps(decision.to_dict(), ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


@app.command("decide")
def decide_command(
    policy: Annotated[
        Path | None,
        typer.Option("--policy", "-p", help="Policy pack (YAML or JSON).", show_default=False),
    ] = None,
    source: Annotated[
        str, typer.Argument(help="JSONL file of requests, or - for stdin.", show_default=True)
    ] = "-",
    keyring: KeyringOption = None,
    explain_trails: Annotated[
        bool, typer.Option("--explain", help="Print readable why-trails instead of JSON.")
    ] = False,
    deadline_ms: DeadlineOption = 50.0,
    journal: JournalOption = None,
    engine: EngineOption = None,
    mapping: MappingOption = None,
    query: QueryOption = None,
    cedar_schema: CedarSchemaOption = None,
    cedar_entities: CedarEntitiesOption = None,
) -> None:
    """Decide JSONL requests: one Decision JSON per line out, streaming, in constant memory.

    With --policy, refusalkit's own engine decides; with --engine, Cedar, Rego, OPA or AGT does,
    and each answer becomes the same decision record. Exits 0 whatever the decisions (a
    malformed line is decided [bold]unavailable[/]).
    """
    spec = engine_spec(engine, mapping, query, cedar_schema, cedar_entities)
    decide, ring = decider(policy, spec, keyring, deadline_ms)
    emit = _emitter(explain_trails, sys.stdout)
    try:
        with _open_input(source) as lines:
            if journal is None:
                for number, decision in decide(lines):
                    emit(number, decision)
            else:
                with open_journal(journal, ring) as log:
                    _decide_journaled(decide(lines), log, emit)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, like cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


Emit = Callable[[int, Decision], None]


def _emitter(explain_trails: bool, out: IO[str]) -> Emit:
    """Write one decision: a JSON line, or its readable why-trail."""

    def emit(number: int, decision: Decision) -> None:
        if explain_trails:
            out.write(explain(decision, label=f"line {number}") + "\n\n")
        else:
            _write_decision(decision, out)

    return emit


def _decide_journaled(decided: Iterator[tuple[int, Decision]], log: Journal, emit: Emit) -> None:
    """Append decisions in batches (at most 1,000, or 0.2 s old), print each once durable.

    Ends with a signed checkpoint covering everything appended, reported on stderr.
    """
    batch: list[tuple[int, Decision]] = []
    started = time.monotonic()
    appended = 0
    for item in decided:
        if not batch:
            started = time.monotonic()
        batch.append(item)
        if len(batch) >= JOURNAL_BATCH or time.monotonic() - started > JOURNAL_LATENCY_S:
            appended += _flush(batch, log, emit)
    appended += _flush(batch, log, emit)
    log.checkpoint()
    err_console.print(
        f"journaled {appended} decisions; {log.size()} entries, checkpoint signed", markup=False
    )


def _flush(batch: list[tuple[int, Decision]], log: Journal, emit: Emit) -> int:
    if not batch:
        return 0
    log.append([decision.to_dict() for _, decision in batch])
    for number, decision in batch:
        emit(number, decision)
    sys.stdout.flush()
    count = len(batch)
    batch.clear()
    return count


# -- policy ---------------------------------------------------------------------------------------


@policy_app.command("check")
def policy_check(
    pack_path: Annotated[Path, typer.Argument(metavar="PACK", help="Policy pack (YAML or JSON).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Validate a pack and summarise it: rules, stages, classes, digest."""
    summary = load_pack(pack_path).summary()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
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


# -- codes ----------------------------------------------------------------------------------------


@app.command("codes")
def codes_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """The reason codes (registry version 2): meaning, retryability, what the caller should do."""
    rows = [
        {"code": c.value, "meaning": c.meaning, "retryable": c.retryable, "retry": c.retry,
         "hint": c.hint, "since": c.since}
        for c in ReasonCode
    ]  # fmt: skip
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"reason codes, version {REASON_CODES_VERSION}", title_justify="left")
    for column in ("code", "meaning", "retryable", "what the caller should do"):
        table.add_column(column)
    for code in ReasonCode:
        table.add_row(code.value, code.meaning, code.retry, code.hint)
    out_console.print(table)


# -- demo -----------------------------------------------------------------------------------------


def demo_decisions(keyring: Keyring) -> tuple[Pack, list[tuple[int, Decision]]]:
    """Decide the bundled requests against the bundled pack: ``(pack, [(line, decision)])``."""
    pack = load_pack(example_path("agent-tools.yaml"))
    dp = DecisionPoint(pack, keyring)
    with example_path("requests.jsonl").open("rb") as lines:
        return pack, list(decide_lines(dp, lines))


def _count_table(title: str, counts: Counter[str]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(title.rsplit(" ", maxsplit=1)[-1])
    table.add_column("decisions", justify="right")
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(key, str(count))
    return table


def _print_demo(pack: Pack, decided: list[tuple[int, Decision]]) -> None:
    out_console.print(
        Text(
            f"refusalkit demo: {len(decided)} requests against {pack.id} {pack.version}",
            style="bold",
        )
    )
    out_console.print(f"pack digest {pack.digest}", markup=False)
    actions = Counter(d.action.value for _, d in decided)
    codes = Counter(d.reason_code.value if d.reason_code else "(none)" for _, d in decided)
    out_console.print(_count_table("decisions per action", actions))
    out_console.print(_count_table("decisions per reason code", codes))
    seen: set[ReasonCode] = set()
    for number, decision in decided:
        code = decision.reason_code
        if code is None or code in seen:
            continue
        seen.add(code)
        out_console.print(
            Text(f"\none {code.value} refusal (requests.jsonl line {number})", style="bold")
        )
        out_console.print(Text(explain(decision)))


@app.command("demo")
def demo_command(keyring: KeyringOption = None) -> None:
    """Decide the bundled example requests against the bundled pack, and summarise.

    Nothing to configure: uses your default keyring (created on first use).
    """
    ring = load_keyring(keyring)
    pack, decided = demo_decisions(ring)
    _print_demo(pack, decided)
    _journal_demo(ring, [decision for _, decision in decided])


def demo_journal_path() -> Path:
    """Where the demo keeps its journal: ``demo-journal.db`` in the user's data directory."""
    return Path(platformdirs.user_data_dir("refusalkit")) / "demo-journal.db"


def _journal_demo(ring: Keyring, decisions: list[Decision]) -> None:
    """Append the demo's decisions to its journal, sign a checkpoint, and verify it all."""
    path = demo_journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_journal(path, ring, origin="refusalkit.local/demo") as log:
        indices = log.append([decision.to_dict() for decision in decisions])
        log.checkpoint()
        report = log.verify()
        proof = log.inclusion_proof(indices[-1])
    out_console.print(Text("\njournal", style="bold"))
    out_console.print(
        f"appended {len(indices)} decisions to {path} (entries {indices[0]}..{indices[-1]})",
        markup=False,
    )
    out_console.print(
        f"signed checkpoint: origin {report.origin}, size {report.size}, root {report.root}",
        markup=False,
    )
    out_console.print(
        f"verified: {report.size} entries recomputed, {report.checkpoints} checkpoint(s) "
        f"consistent; inclusion proof of entry {indices[-1]}: {len(proof['hashes'])} hashes",
        markup=False,
    )
    out_console.print(
        f"next: refusalkit journal query {path} --reason-code unavailable", markup=False
    )


# -- keys -----------------------------------------------------------------------------------------

KeyringPath = Annotated[Path, typer.Argument(metavar="PATH", help="Keyring file.")]


def _public_info(ring: Keyring) -> dict[str, Any]:
    """What may be shown of a keyring: ids, the active ones, public keys. Never key material."""
    return {
        "redaction": {"active": ring.redaction_active, "key_ids": sorted(ring.redaction_keys)},
        "signing": {
            "active": ring.signing_active,
            "public_keys": {
                kid: base64.b64encode(ring.public_key_bytes(kid)).decode("ascii")
                for kid in sorted(ring.signing_keys)
            },
        },
    }


def _show(ring: Keyring, path: Path) -> None:
    info = _public_info(ring)
    table = Table(title=f"keyring {path}", title_justify="left")
    table.add_column("kind")
    table.add_column("key id")
    table.add_column("active")
    table.add_column("public key (Ed25519, base64)", overflow="fold")
    for kid in info["redaction"]["key_ids"]:
        active = "yes" if kid == ring.redaction_active else ""
        table.add_row("redaction (HMAC-SHA256)", kid, active, "-")
    for kid, public in info["signing"]["public_keys"].items():
        active = "yes" if kid == ring.signing_active else ""
        table.add_row("signing (Ed25519)", kid, active, public)
    out_console.print(table)


@keys_app.command("init")
def keys_init(
    path: KeyringPath,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Create a keyring (mode 0600): a redaction key and an Ed25519 signing key."""
    if path.exists() and not force:
        raise KeyringError(
            f"{path} already exists", hint="Use `refusalkit keys rotate PATH` to add a key."
        )
    ring = Keyring.generate()
    ring.save(path)
    err_console.print(f"created keyring {path} (mode 0600)", markup=False)
    _show(ring, path)


@keys_app.command("rotate")
def keys_rotate(
    path: KeyringPath,
    signing: Annotated[
        bool, typer.Option("--signing", help="Rotate the signing key instead of the redaction key.")
    ] = False,
) -> None:
    """Add a new active key; old key ids stay, so old tokens and signatures stay readable."""
    ring = Keyring.load(path)
    ring = ring.rotate_signing() if signing else ring.rotate_redaction()
    ring.save(path)
    kind, kid = (
        ("signing", ring.signing_active) if signing else ("redaction", ring.redaction_active)
    )
    err_console.print(f"{kind} key {kid} is now active in {path}", markup=False)
    _show(ring, path)


@keys_app.command("show")
def keys_show(
    path: KeyringPath,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show key ids, the active keys and public keys (never secret key material)."""
    ring = Keyring.load(path)
    if as_json:
        typer.echo(json.dumps(_public_info(ring), indent=2))
        return
    _show(ring, path)
