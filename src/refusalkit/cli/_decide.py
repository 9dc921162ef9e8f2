"""CLI verbs ``decide`` and ``codes``: decide JSONL requests, list the reason codes.

Exit codes: 0 on success whatever the decisions, unless ``--fail-on`` names decisions to gate on
(then 3 when one was made, as ``opa eval --fail`` gates on a result); 2 on bad usage, a bad pack
or a bad keyring (a one-line ``error:`` and a ``hint:``).
"""

from __future__ import annotations

import enum
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.table import Table

from refusalkit.cli._app import app
from refusalkit.cli._common import (
    KeyringOption,
    err_console,
    open_signing_journal,
    out_console,
)
from refusalkit.cli._engines import (
    CedarEntitiesOption,
    CedarSchemaOption,
    EngineOption,
    MappingOption,
    QueryOption,
    decider,
    engine_spec,
)
from refusalkit.cli._terminal import output_closed
from refusalkit.decide import (
    explain,
)
from refusalkit.errors import UsageError
from refusalkit.journal import Journal
from refusalkit.model import REASON_CODES_VERSION, Action, Decision, ReasonCode

__all__ = ["PolicyOption", "decide_command"]

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


FAIL_EXIT = 3


class FailOn(enum.StrEnum):
    """Which decisions make ``decide`` exit 3 (``--fail-on``)."""

    DENY = "deny"  # refused by the pack: deny or block, not for a malformed or failed request
    REFUSE = "refuse"  # any deny or block, input-rejected and unavailable too
    ANY = "any"  # anything but allow (audit too)

    def trips(self, decision: Decision) -> bool:
        """Whether ``decision`` is one this setting gates on."""
        if self is FailOn.ANY:
            return decision.action is not Action.ALLOW
        if not decision.action.refuses:
            return False
        own = decision.reason_code not in (ReasonCode.INPUT_REJECTED, ReasonCode.UNAVAILABLE)
        return self is FailOn.REFUSE or own


FailOnOption = Annotated[
    FailOn | None,
    typer.Option(
        "--fail-on",
        help="Exit 3 once every request is decided if any decision was one of these: deny "
        "(refused by the pack), refuse (any deny or block, malformed and failed requests too), "
        "any (anything but allow). Like `opa eval --fail`.",
        show_default=False,
    ),
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
    fail_on: FailOnOption = None,
) -> None:
    """Decide JSONL requests: one Decision JSON per line out, streaming, in constant memory.

    With --policy, refusalkit's own engine decides; with --engine, Cedar, Rego, OPA or AGT does,
    and each answer becomes the same decision record. Exits 0 whatever the decisions (a
    malformed line is decided [bold]input-rejected[/]), or 3 with --fail-on when a decision it
    names was made; 2 on bad usage, a bad pack or a bad keyring.
    """
    spec = engine_spec(engine, mapping, query, cedar_schema, cedar_entities)
    decide, ring = decider(policy, spec, keyring, deadline_ms)
    tripped: list[int] = []  # [how many, first line]: constant memory, like the stream
    emit = _gated(_emitter(explain_trails, sys.stdout), fail_on, tripped)
    try:
        with _open_input(source) as lines:
            if journal is None:
                for number, decision in decide(lines):
                    emit(number, decision)
            else:
                with open_signing_journal(journal, ring, keyring) as log:
                    _decide_journaled(decide(lines), log, emit)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, like cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    if fail_on is not None and tripped:
        err_console.print(
            f"--fail-on {fail_on.value}: {tripped[0]} decision(s) matched, the first on line "
            f"{tripped[1]}",
            markup=False,
        )
        raise typer.Exit(FAIL_EXIT)


def _gated(emit: Emit, fail_on: FailOn | None, tripped: list[int]) -> Emit:
    """``emit`` that also counts, in ``tripped``, the decisions ``fail_on`` names (and the
    first one's line)."""
    if fail_on is None:
        return emit

    def gated(number: int, decision: Decision) -> None:
        if fail_on.trips(decision):
            tripped[:] = [tripped[0] + 1, tripped[1]] if tripped else [1, number]
        emit(number, decision)

    return gated


Emit = Callable[[int, Decision], None]


def _emitter(explain_trails: bool, out: IO[str]) -> Emit:
    """Write one decision: a JSON line, or its readable why-trail."""

    def emit(number: int, decision: Decision) -> None:
        if explain_trails:
            out.write(explain(decision, label=f"line {number}") + "\n\n")
        else:
            _write_decision(decision, out)
        if output_closed():  # nobody reads any more: stop deciding
            raise BrokenPipeError

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


@app.command("codes")
def codes_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """The reason codes (registry version 2): meaning, retryability, what the caller should do.

    Each decision record states the lowest registry version that defines its code (its
    `reason_codes_version`, the `since` column), so most records say 1: a reader that knows
    only version 1 still reads them.
    """
    rows = [
        {"code": c.value, "meaning": c.meaning, "retryable": c.retryable, "retry": c.retry,
         "hint": c.hint, "since": c.since}
        for c in ReasonCode
    ]  # fmt: skip
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(
        title=f"reason codes, registry version {REASON_CODES_VERSION}",
        title_justify="left",
        caption="A decision's reason_codes_version is the lowest registry version that defines "
        "its code (since), not the registry's version: a version 1 code is read as version 1.",
        caption_justify="left",
    )
    for column in ("code", "since", "meaning", "retryable", "what the caller should do"):
        table.add_column(column)
    for code in ReasonCode:
        table.add_row(code.value, str(code.since), code.meaning, code.retry, code.hint)
    out_console.print(table)
