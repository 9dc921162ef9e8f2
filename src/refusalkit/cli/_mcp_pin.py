"""``refusalkit mcp pin``: show the pinned tool definitions, review the changes a proxy refused
to offer, and accept them (docs/mcp.md, Pinned tools).

``mcp wrap --pin FILE`` and ``mcp proxy --pin FILE`` write the definitions that differ from their
pins to ``FILE.pending``; ``review`` shows each change member by member, and ``accept`` moves the
reviewed definitions into ``FILE``. Every text from the server is printed with its control
characters escaped: a description cannot move the terminal's cursor or forge a line.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from refusalkit.cli._common import out_console
from refusalkit.cli._mcp import mcp_app
from refusalkit.errors import UsageError

__all__ = ["pin_app"]

pin_app = typer.Typer(
    help="Pinned tool definitions: show them, review the changes a proxy refused, accept them.",
    no_args_is_help=True,
)
mcp_app.add_typer(pin_app, name="pin")

PinPath = Annotated[Path, typer.Argument(help="The pin file given to wrap/proxy --pin.")]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: str) -> str:
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _say(text: str) -> None:
    out_console.print(_safe(text), markup=False, highlight=False)


def _pins() -> Any:
    try:
        import refusalkit.mcp_proxy as pins  # noqa: PLC0415 (only with the mcp extra)
    except ImportError as exc:
        raise UsageError(
            f"pinning needs the MCP SDK ({exc.name} is missing)",
            hint="Install it with `pip install 'refusalkit[mcp]'`.",
        ) from exc
    return pins


def _load(path: Path) -> Any:
    pins = _pins()
    if not path.exists():
        raise UsageError(
            f"there is no pin file at {path}",
            hint="Start `refusalkit mcp wrap` or `mcp proxy` with --pin FILE: the first tools/list "
            "answer is pinned into it.",
        )
    return pins.PinFile.load(path)


def _pending(path: Path) -> Any:
    pins = _pins()
    pending = pins.pending_path(path)
    return pins.PinFile.load(pending) if pending.exists() else pins.PinFile({})


@pin_app.command("show")
def show_command(path: PinPath) -> None:
    """List the pinned tools (name and digest) and how many changes wait for review."""
    pinned, pending = _load(path), _pending(path)
    for name in sorted(pinned.tools):
        _say(f"{name}  {pinned.tools[name].digest}")
    _say(f"{len(pinned.tools)} tool(s) pinned; {len(pending.tools)} change(s) to review")


def _diff(member: str, before: Any, after: Any) -> list[str]:
    def lines(value: Any) -> list[str]:
        text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True)
        return text.splitlines()

    return list(
        difflib.unified_diff(
            lines(before), lines(after), f"pinned {member}", f"listed {member}", lineterm=""
        )
    )


@pin_app.command("review")
def review_command(path: PinPath) -> None:
    """Show each tool definition a proxy refused to offer, member by member, against its pin."""
    pins = _pins()
    pinned, pending = _load(path), _pending(path)
    if not pending.tools:
        _say("no changes to review")
        return
    for name in sorted(pending.tools):
        new, old = pending.tools[name], pinned.tools.get(name)
        _say(f"== {name}: {pins.pin_problem(new.definition, old)}")
        for member in pins.PIN_MEMBERS:
            before = None if old is None else old.definition.get(member)
            for line in _diff(member, before, new.definition.get(member)):
                _say(line)
        _say(f"accept with: refusalkit mcp pin accept {path} '{name}@{new.digest}'")


@pin_app.command("accept")
def accept_command(
    path: PinPath,
    tools: Annotated[
        list[str],
        typer.Argument(
            metavar="TOOL[@DIGEST]...",
            help="Tools whose pending definition to pin; with @DIGEST (as `review` prints it), "
            "only if the pending definition is still the one reviewed.",
        ),
    ],
) -> None:
    """Pin the reviewed definitions of TOOLs in place of their old pins."""
    pins = _pins()
    pinned, pending = _load(path), _pending(path)
    accepted = dict(pinned.tools)
    left = dict(pending.tools)
    for item in tools:
        name, _, digest = item.partition("@")
        pin = left.pop(name, None)
        if pin is None:
            raise UsageError(
                f"no pending change of the tool {name!r}", hint="See `refusalkit mcp pin review`."
            )
        if digest and digest != pin.digest:
            raise UsageError(
                f"the pending definition of {name!r} is {pin.digest}, not the {digest} reviewed",
                hint="The server changed it again: review it once more.",
            )
        accepted[name] = pin
    pins.PinFile(accepted).save(path)
    pins.PinFile(left).save(pins.pending_path(path))
    _say(f"pinned {len(tools)} tool(s); restart the proxy to enforce the new pins")
