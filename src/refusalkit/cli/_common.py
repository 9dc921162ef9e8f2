"""What every CLI verb shares: consoles, the keyring option, and error reporting.

A ``RefusalkitError`` anywhere below a command is printed as ``error:`` + ``hint:`` on stderr and
exits with the error's code (2 for usage and input, 1 for failed verification); never a traceback.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer._click import Context  # typer vendors click; its Context is the one passed
from typer.core import TyperGroup

from refusalkit.cli._extras import extra_for
from refusalkit.errors import MissingExtraError, RefusalkitError
from refusalkit.keyring import KEYRING_ENV, Keyring, default_keyring_path, resolve_keyring

if TYPE_CHECKING:
    from refusalkit.journal import Journal

__all__ = [
    "GuardedGroup",
    "KeyringOption",
    "err_console",
    "keyring_file",
    "load_keyring",
    "open_signing_journal",
    "out_console",
    "report_error",
    "without_self_reference",
]

# Output that is not a terminal (a pipe, a file, a CI log) has no width to fit: tables get room
# enough not to fold, unless $COLUMNS says otherwise. A terminal gets its own width.
PIPED_WIDTH = 160


def _width(stream: Any) -> int | None:
    if os.environ.get("COLUMNS"):
        return None  # rich reads it
    try:
        return None if stream.isatty() else PIPED_WIDTH
    except (AttributeError, ValueError):
        return PIPED_WIDTH


out_console = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err_console = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))

KeyringOption = Annotated[
    Path | None,
    typer.Option(
        "--keyring",
        help="Keyring file (redaction and signing keys). Default: $REFUSALKIT_KEYRING, else "
        "the one in your data directory (`refusalkit keys init` makes it).",
        show_default=False,
    ),
]


def report_error(exc: RefusalkitError) -> None:
    """Print an error and what to do about it, one line each, on stderr."""
    # The texts are escaped: a message may hold brackets (``refusalkit[server]``, a JSON path).
    err_console.print(f"[bold red]error:[/] {escape(exc.message)}", markup=True, highlight=False)
    if exc.hint:
        err_console.print(f"[bold]hint:[/] {escape(exc.hint)}", markup=True, highlight=False)


def load_keyring(path: Path | None) -> Keyring:
    """The keyring the user chose, or the default one (created on first use, with a notice)."""
    created = path is None and not default_keyring_path().exists()
    ring, where = resolve_keyring(path, create=True)
    if created:
        err_console.print(f"created a new keyring at {where} (mode 0600)")
    return ring


def keyring_file(path: Path | None) -> Path:
    """The keyring file ``load_keyring`` reads: --keyring, $REFUSALKIT_KEYRING, the default."""
    explicit = path or os.environ.get(KEYRING_ENV)
    return Path(explicit) if explicit else default_keyring_path()


@contextmanager
def open_signing_journal(
    store: str | Path,
    ring: Keyring,
    keyring: Path | None,
    *,
    origin: str | None = None,
    create: bool = True,
) -> Iterator[Journal]:
    """The journal at ``store`` opened by a verb that may sign a checkpoint (or a receipt's).

    Every signing verb opens through here, so each checks the store against the last checkpoint
    this keyring signed, kept beside the keyring file (docs/design/journal.md, "Signer state"):
    a store rolled back, truncated or rewritten gets no new signature.
    """
    from refusalkit.journal import open_journal  # noqa: PLC0415 (lazy)

    state = signer_state(keyring)
    with open_journal(store, ring, origin=origin, create=create, signer_state=state) as journal:
        yield journal


def signer_state(keyring: Path | None) -> Path:
    """The signer-state directory of the keyring file ``load_keyring`` reads, for a verb that
    signs checkpoints over a journal it opens itself (docs/design/journal.md, "Signer state")."""
    from refusalkit.journal import signer_state_dir  # noqa: PLC0415 (lazy)

    return signer_state_dir(keyring_file(keyring))


def _missing_extra(exc: ModuleNotFoundError) -> MissingExtraError | None:
    """The error to print for a missing optional dependency, or None when it is no extra's."""
    extra = extra_for(exc.name or "")
    return MissingExtraError(exc.name or "", extra) if extra and exc.name else None


def _running_command(group: TyperGroup, args: list[str]) -> str:
    """``refusalkit policy check``: the command path that ``args`` selects in ``group``."""
    words: list[str] = ["refusalkit"]
    node: Any = group
    for arg in args:
        child = node.commands.get(arg) if isinstance(node, TyperGroup) else None
        if child is None:
            break
        words.append(arg)
        node = child
    return " ".join(words)


def without_self_reference(hint: str, command: str) -> str:
    """``hint`` less any clause that tells the user to run ``command``, the one they are running.

    "Fix the pack, then run `refusalkit policy check PACK`." is good advice from ``decide`` and
    a loop from ``policy check`` itself. A mention that adds an option (`` --adopt``) advises
    running the command differently, and stays.
    """
    clauses = re.split(r"(?<=[.;])\s+|,\s+then\s+|;\s+", hint)
    mention = re.compile(rf"`{re.escape(command)}(?:\s[^`]*)?`")
    kept = [c for c in clauses if not _loops(mention, c)]
    if len(kept) == len(clauses):
        return hint
    text = " ".join(c.strip() for c in kept).strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _loops(mention: re.Pattern[str], clause: str) -> bool:
    """Whether ``clause`` sends the user back to the same command with no new option."""
    return any(" --" not in found.group(0) for found in mention.finditer(clause))


class GuardedGroup(TyperGroup):
    """The top-level group: turns ``RefusalkitError`` into a message and an exit code.

    A missing optional dependency becomes a one-line ``error:`` naming the extra to install.
    """

    def invoke(self, ctx: Context) -> Any:
        """Run the command; report refusalkit errors instead of a traceback."""
        # The sub-command words, read before ``invoke`` consumes them (click keeps them in
        # ``_protected_args``), so that a hint never tells the user to run this very command.
        words = [*getattr(ctx, "_protected_args", ()), *ctx.args]
        try:
            return super().invoke(ctx)
        except RefusalkitError as exc:
            self._report(exc, words)
            raise typer.Exit(exc.exit_code) from None
        except ModuleNotFoundError as exc:
            missing = _missing_extra(exc)
            if missing is None:
                raise
            self._report(missing, words)
            raise typer.Exit(missing.exit_code) from None

    def _report(self, exc: RefusalkitError, words: list[str]) -> None:
        command = _running_command(self, words)
        if exc.hint:
            exc.hint = without_self_reference(exc.hint, command)
        report_error(exc)
        sys.stderr.flush()
