"""Pinned tool definitions: a server may not change a tool after it was reviewed
(docs/design/mcp.md, Pinned tools).

The pin of a tool is ``sha256:<hex>`` of the RFC 8785 form of the five members that tell a model
what a tool is and does: ``name``, ``description``, ``inputSchema``, ``outputSchema`` and
``annotations`` (an absent member is ``null``). ``title``, ``icons`` and ``_meta`` are left out:
they do not instruct the model. A pin file holds each pinned tool's digest and definition, so a
change can be named (which members differ) and reviewed before it is accepted.

``pin_problem`` is the pure trust function: a listed tool either matches its pin, or the answer says
what is wrong with it (not pinned; which members changed). ``PinSet`` holds the pins one proxy
enforces and what its sessions saw, and keeps the pending changes file for ``refusalkit mcp pin``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refusalkit._durable import write_durably
from refusalkit.errors import UsageError
from refusalkit.model import canonical_json

__all__ = [
    "MEMBERS",
    "PIN_SCHEMA",
    "Pin",
    "PinFile",
    "PinSet",
    "definition_of",
    "pending_path",
    "pin_problem",
    "tool_digest",
]

PIN_SCHEMA = "refusalkit.mcp-pins/v1"
MEMBERS = ("name", "description", "inputSchema", "outputSchema", "annotations")
"""The members of a ``Tool`` (MCP ``tools/list``) that a pin covers, in the order they are named."""


def definition_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of a tool's ``tools/list`` entry: the five members, ``null`` when absent."""
    return {member: tool.get(member) for member in MEMBERS}


def tool_digest(tool: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the RFC 8785 form of ``definition_of(tool)``."""
    return "sha256:" + hashlib.sha256(canonical_json(definition_of(tool))).hexdigest()


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned tool: its digest and the definition it was computed from."""

    digest: str
    definition: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not self.digest.startswith("sha256:") or len(self.digest) != 71:
            raise ValueError(f"a pin digest is sha256:<64 hex>, not {self.digest!r}")

    @classmethod
    def of(cls, tool: Mapping[str, Any]) -> Pin:
        """The pin of a listed tool."""
        return cls(tool_digest(tool), definition_of(tool))

    def to_dict(self) -> dict[str, Any]:
        """Wire form: ``{"digest", "definition"}``."""
        return {"digest": self.digest, "definition": dict(self.definition)}


def pin_problem(tool: Mapping[str, Any], pin: Pin | None) -> str | None:
    """None when ``tool`` matches ``pin``; else what differs, for the refusal's message."""
    if pin is None:
        return "the tool is not pinned"
    if tool_digest(tool) == pin.digest:
        return None
    now = definition_of(tool)
    changed = [
        m for m in MEMBERS if canonical_json(now[m]) != canonical_json(pin.definition.get(m))
    ]
    if not changed:  # the pin's definition does not give its digest: the file was edited
        return "the tool's definition does not match its pin"
    return f"the tool's {', '.join(changed)} changed since it was pinned"


@dataclass(frozen=True, slots=True)
class PinFile:
    """The content of a pin file (schema ``refusalkit.mcp-pins/v1``): tool name to pin."""

    tools: Mapping[str, Pin]

    @classmethod
    def of_tools(cls, tools: Iterable[Mapping[str, Any]]) -> PinFile:
        """Pins for a ``tools/list`` answer's tools (trust on first use)."""
        return cls({str(t["name"]): Pin.of(t) for t in tools if isinstance(t.get("name"), str)})

    @classmethod
    def from_dict(cls, data: Any, where: str) -> PinFile:
        """Parse a pin file's JSON; a ``UsageError`` naming the file when it is not one."""
        if not isinstance(data, dict) or data.get("schema") != PIN_SCHEMA:
            raise UsageError(
                f"{where} is not a pin file (schema {PIN_SCHEMA})",
                hint="Give --pin a file made by `refusalkit mcp wrap/proxy --pin`, or a new path.",
            )
        tools = data.get("tools")
        if not isinstance(tools, dict):
            raise UsageError(f"{where}: `tools` must be an object", hint="Re-create the pin file.")
        try:
            pins = {str(name): _pin(raw) for name, raw in tools.items()}
        except (TypeError, ValueError, KeyError) as exc:
            raise UsageError(f"{where}: a pin is malformed ({exc})", hint="Re-create it.") from exc
        return cls(pins)

    def to_dict(self) -> dict[str, Any]:
        """Wire form, tools sorted by name."""
        tools = {name: self.tools[name].to_dict() for name in sorted(self.tools)}
        return {"schema": PIN_SCHEMA, "tools": tools}

    def save(self, path: Path) -> None:
        """Write the file whole, or leave the old one (rename-based)."""
        write_durably(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> PinFile:
        """Read a pin file; a ``UsageError`` when it cannot be read or parsed."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"cannot read the pin file {path}: {exc}", hint="Check the --pin path."
            ) from exc
        return cls.from_dict(data, str(path))


def _pin(raw: Any) -> Pin:
    definition = raw["definition"]
    if not isinstance(definition, dict):
        raise TypeError("a definition must be an object")
    return Pin(str(raw["digest"]), definition)


def pending_path(path: Path) -> Path:
    """Where a proxy records tool definitions it refused to offer: ``<pin file>.pending``."""
    return path.with_name(path.name + ".pending")


def _pending_of(path: Path) -> Mapping[str, Pin]:
    """The pending changes recorded so far (none when the file is missing or unreadable)."""
    pending = pending_path(path)
    if not pending.exists():
        return {}
    try:
        return PinFile.load(pending).tools
    except UsageError:  # rewritten whole by the next change
        return {}


class PinSet:
    """The pins one proxy enforces, what each session was last shown, and pending changes.

    With no pin file yet, the first ``tools/list`` answer any session gets is pinned and written
    (trust on first use); from then on the pins do not change while the proxy runs. A listed tool
    that differs from its pin (or has none) is recorded in the pending file, which ``refusalkit
    mcp pin review`` shows and ``accept`` moves into the pin file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._pins: PinFile | None = PinFile.load(path) if path.exists() else None
        self._pending: dict[str, Pin] = dict(_pending_of(path))
        self._seen: dict[str, dict[str, str | None]] = {}  # session -> tool -> problem

    @property
    def pins(self) -> PinFile | None:
        """The pins in force (None until the first listing is pinned)."""
        return self._pins

    def review(self, session: str, tools: list[Any]) -> list[Any]:
        """The tools of one ``tools/list`` page a session may be shown; remembers the rest."""
        with self._lock:
            if self._pins is None:
                self._pins = PinFile.of_tools(t for t in tools if isinstance(t, dict))
                self._pins.save(self.path)
            pins = self._pins.tools
        seen = self._seen.setdefault(session, {})
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                continue
            problem = pin_problem(tool, pins.get(name))
            seen[name] = problem
            if problem is None:
                kept.append(tool)
            else:
                self._note_pending(name, tool)
        return kept

    def problem(self, session: str, tool: str) -> str | None:
        """Why a call of ``tool`` in ``session`` is refused by its pin, or None.

        A tool listed differently from its pin in this session is refused (until a later listing
        shows it as pinned again); a tool that is not pinned is refused, listed or not.
        """
        seen = self._seen.get(session, {})
        if tool in seen:
            return seen[tool]
        pins = self._pins
        if pins is None or tool not in pins.tools:
            return "the tool is not pinned"
        return None

    def end_session(self, session: str) -> None:
        """Forget what a session that ended was shown."""
        self._seen.pop(session, None)

    def _note_pending(self, name: str, tool: Mapping[str, Any]) -> None:
        pin = Pin.of(tool)
        with self._lock:
            if self._pending.get(name) == pin:
                return
            self._pending[name] = pin
            pending = PinFile(dict(self._pending))
        try:
            pending.save(pending_path(self.path))
        except OSError:  # the refusal stands; review then needs another listing
            return
