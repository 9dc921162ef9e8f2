"""CLI verb ``demo``: the bundled requests against the bundled pack, journaled and verified."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import platformdirs
from rich.table import Table
from rich.text import Text

from refusalkit.cli._app import app
from refusalkit.cli._common import (
    KeyringOption,
    load_keyring,
    open_signing_journal,
    out_console,
)
from refusalkit.decide import (
    DecisionPoint,
    Pack,
    decide_lines,
    explain,
    load_pack,
)
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import Decision, ReasonCode

__all__ = ["demo_decisions", "demo_journal_path"]

BROKEN_ON_PURPOSE = (
    "deliberately malformed: its path holds a lone UTF-16 surrogate, which canonical JSON "
    "(RFC 8785) cannot encode, so deciding it raises an internal error and the decision fails "
    "closed"
)


def demo_decisions(keyring: Keyring) -> tuple[Pack, list[tuple[int, Decision]]]:
    """Decide the bundled requests against the bundled pack: ``(pack, [(line, decision)])``."""
    pack = load_pack(example_path("agent-tools.yaml"))
    dp = DecisionPoint(pack, keyring)
    # One bundled request is broken on purpose (see BROKEN_ON_PURPOSE); the demo announces it
    # itself, so the decision point's warning would only read like a crash here.
    quiet = logging.getLogger("refusalkit.decide")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with example_path("requests.jsonl").open("rb") as lines:
            return pack, list(decide_lines(dp, lines))
    finally:
        quiet.setLevel(level)


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
        if code is ReasonCode.UNAVAILABLE:
            out_console.print(f"line {number} is {BROKEN_ON_PURPOSE}.", markup=False)
        out_console.print(Text(explain(decision)))


@app.command("demo")
def demo_command(keyring: KeyringOption = None) -> None:
    """Decide the bundled example requests against the bundled pack, and summarise.

    Nothing to configure: uses your default keyring (created on first use).
    """
    ring = load_keyring(keyring)
    pack, decided = demo_decisions(ring)
    _print_demo(pack, decided)
    _journal_demo(ring, keyring, [decision for _, decision in decided])


def demo_journal_path() -> Path:
    """Where the demo keeps its journal: ``demo-journal.db`` in the user's data directory."""
    return Path(platformdirs.user_data_dir("refusalkit")) / "demo-journal.db"


def _journal_demo(ring: Keyring, keyring: Path | None, decisions: list[Decision]) -> None:
    """Append the demo's decisions to its journal, sign a checkpoint, and verify it all."""
    path = demo_journal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_signing_journal(path, ring, keyring, origin="refusalkit.local/demo") as log:
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
        f"next: refusalkit journal query {path} --reason-code input-rejected", markup=False
    )
