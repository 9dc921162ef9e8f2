"""``refusalkit chat``: an interactive guarded session, and ``chat replay`` to audit a transcript.

docs/design/chat.md. Both paths use the same ``ChatRuntime``; ``--policy PACK`` gives the runtime a
decision point so proposed tool calls are checkable (``no_unauthorized_action``). Everything
printed besides the reply itself (replay JSON, ``--show-verdicts``) is the redacted wire form:
secrets and personal data appear as keyed redaction tokens unless ``--record-text`` is given.
An interactive session that loses its endpoint stops with ``error:``/``hint:`` and exit code 2.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, err_console, load_keyring, out_console
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring

__all__ = ["app", "chat_app"]

chat_app = typer.Typer(
    name="chat",
    help="Guard chat turns: safety and ethics packs, typed refusals, hedges, turn events.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode="rich",
)

EthicsPackOption = Annotated[
    Path | None,
    typer.Option(
        "--ethics-pack",
        help="Ethics pack (JSON). Default: the bundled default pack; "
        "a pack that does not load falls back to it with a warning.",
    ),
]
PolicyOption = Annotated[
    Path | None,
    typer.Option(
        "--policy",
        help="Policy pack for proposed tool calls (makes no_unauthorized_action checkable).",
    ),
]
TurnLogOption = Annotated[
    Path | None, typer.Option("--turn-log", help="Append every TurnEvent to this JSONL file.")
]
JournalOption = Annotated[
    str | None,
    typer.Option(
        "--journal",
        help="Journal store (SQLite path or postgresql:// URL) for turn "
        "events and refusal decisions.",
    ),
]
RecordTextOption = Annotated[
    bool,
    typer.Option(
        "--record-text",
        help="Your explicit choice to store and print RAW text: turn events carry the text, and "
        "replay / --show-verdicts output is not redacted. Default: keyed digests in events, and "
        "secrets and personal data replaced by keyed redaction tokens in all output.",
    ),
]


def _decision_point(policy: Path | None, keyring: Keyring) -> Any:
    if policy is None:
        return None
    from refusalkit.decide import DecisionPoint, load_pack  # noqa: PLC0415 (only when asked)

    return DecisionPoint(load_pack(policy), keyring)


@contextlib.contextmanager
def _journal(store: str | None, keyring: Keyring) -> Iterator[Any]:
    if store is None:
        yield None
        return
    from refusalkit.journal import open_journal  # noqa: PLC0415 (only when asked)

    with open_journal(store, keyring) as journal:
        yield journal


def _runtime(
    responder: Any,
    *,
    ethics_pack: Path | None,
    policy: Path | None,
    keyring: Keyring,
    journal: Any,
    turn_log: Path | None,
    record_text: bool,
    rearticulate: bool = False,
) -> Any:
    from refusalkit.chat import ChatRuntime  # noqa: PLC0415 (keeps `--help` fast)

    return ChatRuntime(
        responder,
        ethics_pack=ethics_pack,
        keyring=keyring,
        decision_point=_decision_point(policy, keyring),
        journal=journal,
        turn_log=turn_log,
        record_text=record_text,
        rearticulate=rearticulate,
    )


@chat_app.callback()
def chat(
    ctx: typer.Context,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name to ask.")] = None,
    ethics_pack: EthicsPackOption = None,
    show_verdicts: Annotated[
        bool,
        typer.Option(
            "--show-verdicts", help="Print each turn's verdicts and refusal under the reply."
        ),
    ] = False,
    policy: PolicyOption = None,
    keyring_path: KeyringOption = None,
    turn_log: TurnLogOption = None,
    journal: JournalOption = None,
    record_text: RecordTextOption = False,
    rearticulate: Annotated[
        bool,
        typer.Option(
            "--rearticulate", help="After a refusal, ask the model once more with the violated ids."
        ),
    ] = False,
    api_key_env: Annotated[
        str,
        typer.Option("--api-key-env", help="Environment variable holding the endpoint's API key."),
    ] = "OPENAI_API_KEY",
) -> None:
    """Chat with a model through the turn guard (type /exit or Ctrl-D to leave)."""
    if ctx.invoked_subcommand is not None:
        return
    if not endpoint or not model:
        raise UsageError(
            "an interactive chat needs --endpoint and --model",
            hint="e.g. refusalkit chat --endpoint http://127.0.0.1:8000/v1 --model m",
        )
    from refusalkit.chat import EndpointResponder  # noqa: PLC0415

    keyring = load_keyring(keyring_path)
    responder = EndpointResponder(endpoint, model, api_key=os.environ.get(api_key_env))
    with contextlib.closing(responder), _journal(journal, keyring) as store:
        runtime = _runtime(
            responder,
            ethics_pack=ethics_pack,
            policy=policy,
            keyring=keyring,
            journal=store,
            turn_log=turn_log,
            record_text=record_text,
            rearticulate=rearticulate,
        )
        _interact(runtime, show_verdicts=show_verdicts)


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Model-written text as a terminal may show it: every control character but line feed and
    tab as a visible ``\\xNN``, so ANSI and OSC sequences in a reply (clear the screen, rewrite a
    line, write the clipboard with OSC 52) are shown, never obeyed (ECMA-48 §5)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))


def _tolerant_stdin() -> None:
    """Bytes that are not UTF-8 on the terminal become U+FFFD instead of ending the session."""
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="replace")


def _interact(runtime: Any, *, show_verdicts: bool) -> None:
    err_console.print(f"session {runtime.session} — /exit or Ctrl-D to leave")
    _tolerant_stdin()
    while True:
        try:
            line = input("you> ")
        except (EOFError, KeyboardInterrupt):
            break
        if line.strip() in ("/exit", "/quit"):
            break
        if not line.strip():
            continue
        response = runtime.turn(line)  # a ResponderError ends the session: error, hint, exit 2
        out_console.print(terminal_safe(response.surface), markup=False)
        if show_verdicts:
            _print_verdicts(response)


def _print_verdicts(response: Any) -> None:
    """Verdicts, selection and (on a refusal) the withheld articulation, from the redacted wire
    form: the terminal may be logged, so it gets what a stored artefact would."""
    wire = response.to_dict()
    for kind in ("safety", "ethics"):
        for r in wire[f"{kind}_verdict"]["results"]:
            state = (
                "not checkable"
                if not r["runtime_checkable"]
                else ("upheld" if r["upheld"] else "VIOLATED")
            )
            err_console.print(f"  {kind}:{r['id']}: {state}", markup=False)
    what = ", ".join(wire["refusal_tags"]) or "none"
    err_console.print(
        f"  selected: {wire['selected']} ({wire['selected_why']}); refusal: {what}", markup=False
    )
    if wire["selected"] == "refusal":
        withheld = terminal_safe(wire["articulation_surface"])
        err_console.print(f"  withheld: {withheld}", markup=False)


class ReplayFormat(enum.StrEnum):
    """How ``chat replay`` prints its turns."""

    TABLE = "table"
    JSONL = "jsonl"


def _one_line(text: str, width: int) -> str:
    """``text`` on one line (line breaks shown as ⏎), cut to ``width`` characters with …."""
    flat = " ".join(terminal_safe(text).replace("\n", " ⏎ ").split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def _table_row(wire: dict[str, Any], width: int) -> str:
    """One turn: number, verdict, refusal tags, what the user saw (or, for a refusal, what was
    withheld), from the redacted wire form."""
    tags = ",".join(wire["refusal_tags"]) or "-"
    if wire["selected"] == "refusal":
        shown = "withheld: " + wire["articulation_surface"]
    else:
        shown = wire["surface"]
    head = f"{wire['turn']:>4}  {wire['selected']:<12}  {_one_line(tags, 40):<40}  "
    return head + _one_line(shown, max(20, width - len(head)))


def _default_format() -> ReplayFormat:
    return ReplayFormat.TABLE if sys.stdout.isatty() else ReplayFormat.JSONL


@chat_app.command("replay")
def replay_command(
    transcript: Annotated[
        Path,
        typer.Argument(help='Transcript JSONL: {"input", "response", "tool_calls": [...]} a line.'),
    ],
    ethics_pack: EthicsPackOption = None,
    policy: PolicyOption = None,
    keyring_path: KeyringOption = None,
    turn_log: TurnLogOption = None,
    journal: JournalOption = None,
    record_text: RecordTextOption = False,
    output_format: Annotated[
        ReplayFormat | None,
        typer.Option(
            "--format",
            help="table: one line per turn (verdict, refusal tags, surface), the default on a "
            "terminal; jsonl: one ChatResponse JSON per turn, the default otherwise.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Audit a recorded conversation offline: one line (table) or one JSON object per turn."""
    from refusalkit.chat import UnreadableLine, read_transcript, replay  # noqa: PLC0415

    fmt = output_format or _default_format()
    turns = read_transcript(transcript)
    for bad in (t for t in turns if isinstance(t, UnreadableLine)):
        err_console.print(f"warning: {terminal_safe(bad.message)}", markup=False)
        err_console.print(
            f"hint: {bad.where} is refused as a turn and replay goes on; fix that line "
            '(one JSON object a line: {"input": ..., "response": ..., "tool_calls": [...]})',
            markup=False,
        )
    keyring = load_keyring(keyring_path)
    width = shutil.get_terminal_size((120, 24)).columns
    refused = 0
    with _journal(journal, keyring) as store:
        runtime = _runtime(
            None,
            ethics_pack=ethics_pack,
            policy=policy,
            keyring=keyring,
            journal=store,
            turn_log=turn_log,
            record_text=record_text,
        )
        if fmt is ReplayFormat.TABLE:
            typer.echo(f"{'turn':>4}  {'verdict':<12}  {'refusal':<40}  surface")
        for response in replay(runtime, turns):
            refused += response.refused
            wire = response.to_dict()
            if fmt is ReplayFormat.TABLE:
                typer.echo(_table_row(wire, width))
            else:
                typer.echo(json.dumps(wire, ensure_ascii=False, sort_keys=True))
    summary = f"{len(turns)} turns, {refused} refused"
    if fmt is ReplayFormat.TABLE:
        typer.echo(summary)  # the table's last line, where a reader's eye ends
    else:
        err_console.print(summary)  # stdout stays one JSON object a line


app.add_typer(chat_app, name="chat")
