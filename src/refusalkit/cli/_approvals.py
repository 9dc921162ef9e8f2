"""``refusalkit approvals``: list pending requests for approval, grant or deny one
(docs/approvals.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, load_keyring, open_signing_journal
from refusalkit.errors import UsageError
from refusalkit.model import parse_duration

if TYPE_CHECKING:
    from refusalkit.approvals import ApprovalBook

__all__ = ["approvals_app"]

approvals_app = typer.Typer(
    name="approvals",
    help="Human approval of actions a require-approval rule holds back: list, grant, deny.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(approvals_app, name="approvals")

StoreArg = Annotated[
    str,
    typer.Argument(
        help="Journal store: an SQLite file path or a postgresql:// URL.", show_default=False
    ),
]
RequestArg = Annotated[
    str, typer.Argument(help="The request id (`approvals list` shows it).", show_default=False)
]
ApproverOption = Annotated[
    str,
    typer.Option(
        "--approver", help="Who answers: a person, never the agent that asked.", show_default=False
    ),
]


@contextmanager
def _book(store: str, keyring: Path | None) -> Iterator[ApprovalBook]:
    from refusalkit.approvals import ApprovalBook  # noqa: PLC0415 (lazy, like every verb)

    ring = load_keyring(keyring)
    with open_signing_journal(store, ring, keyring, create=False) as journal:
        yield ApprovalBook(journal, ring)


@approvals_app.command("list")
def list_cmd(
    store: StoreArg,
    keyring: KeyringOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
) -> None:
    """Pending requests: tool, agent, rule and message, arguments redacted as in trails."""
    with _book(store, keyring) as book:
        pending = [p.to_dict() for p in book.pending()]
    if as_json:
        for row in pending:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if not pending:
        typer.echo("no pending requests for approval")
    for row in pending:
        typer.echo(
            f"{row['request_id']}  {row['tool']}  agent {row['agent']}  rule {row['rule']}  "
            f"journal index {row['journal_index']}  expires {row['expires_at']}"
        )
        typer.echo(f"  message: {row['message']}")
        typer.echo(f"  args: {json.dumps(row['args'], ensure_ascii=False)}")


@approvals_app.command("grant")
def grant_cmd(
    store: StoreArg,
    request_id: RequestArg,
    approver: ApproverOption,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            help="How long the grant may be used (90s, 15m, 2h); at most the "
            "rule's ttl, which is the default.",
            show_default=False,
        ),
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Grant one request: the same action may then run once, until the grant expires."""
    from refusalkit.approvals import AnswerKind  # noqa: PLC0415 (lazy)

    seconds = None
    if ttl is not None:
        seconds = parse_duration(ttl)
        if seconds is None:
            raise UsageError(f"--ttl {ttl!r} is not a duration", hint="Write 90s, 15m, 2h or 7d.")
    with _book(store, keyring) as book:
        index, answer = book.answer(AnswerKind.GRANT, request_id, approver, ttl_s=seconds)
        book.journal.checkpoint()
    typer.echo(
        json.dumps(
            {"granted": request_id, "journal_index": index, "request_index": answer.request_index,
             "approver": answer.approver, "expires_at": answer.expires_at}
        )
    )  # fmt: skip


@approvals_app.command("deny")
def deny_cmd(
    store: StoreArg,
    request_id: RequestArg,
    approver: ApproverOption,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why, in words the agent's user will read.")
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Deny one request: retries of the same action stay refused, naming the denial."""
    from refusalkit.approvals import AnswerKind  # noqa: PLC0415 (lazy)

    with _book(store, keyring) as book:
        index, answer = book.answer(AnswerKind.DENIAL, request_id, approver, reason=reason)
        book.journal.checkpoint()
    typer.echo(
        json.dumps(
            {"denied": request_id, "journal_index": index, "request_index": answer.request_index,
             "approver": answer.approver}
        )
    )  # fmt: skip
