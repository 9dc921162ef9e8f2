"""Replay: audit a recorded conversation offline (``refusalkit chat replay``).

A transcript is JSONL, one turn a line: ``{"input": ..., "response": ..., "tool_calls": [...]}``
(tool calls as ``{"tool", "args"}`` or OpenAI ``{"function": {"name", "arguments"}}``). Every
turn goes through the runtime's stub path, so replaying the same transcript with the same packs
gives the same surfaces, verdicts and tags (decision ids and timestamps are fresh).

A line that cannot be read as a turn (not JSON, nested too deeply, no string ``input``) is an
``UnreadableLine`` naming the line and the problem; replay refuses it as a turn (typed refusal,
TurnEvent, the problem as evidence) and goes on with the next.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from refusalkit.chat._response import ChatResponse
from refusalkit.chat._runtime import ChatRuntime
from refusalkit.chat._verdict import ToolCall
from refusalkit.errors import UsageError

__all__ = ["TranscriptTurn", "UnreadableLine", "read_transcript", "replay"]

TranscriptTurn = tuple[str, str, tuple[ToolCall, ...]]
HINT = 'Each line: {"input": ..., "response": ..., "tool_calls": [...]}'


class UnreadableLine(NamedTuple):
    """A transcript line that is not a turn: where it is (``file:line``) and what is wrong."""

    where: str
    problem: str

    @property
    def message(self) -> str:
        """``file:line: problem``."""
        return f"{self.where}: {self.problem}"


def _parse_line(text: str, where: str) -> TranscriptTurn:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise UsageError(f"{where}: nested too deeply to read") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("input"), str):
        raise UsageError(
            f"{where}: a turn needs a string `input`",
            hint=HINT,
        )
    response = obj.get("response")
    if not isinstance(response, str):
        raise UsageError(f"{where}: a turn needs a string `response`")
    calls: Any = obj.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise UsageError(f"{where}: `tool_calls` must be a list of objects")
    return obj["input"], response, tuple(ToolCall.from_obj(c) for c in calls)


def _read_line(text: str, where: str) -> TranscriptTurn | UnreadableLine:
    try:
        return _parse_line(text, where)
    except UsageError as exc:
        return UnreadableLine(where, exc.message.removeprefix(f"{where}: "))
    except Exception as exc:  # noqa: BLE001 - a hostile line is refused, never a traceback
        return UnreadableLine(where, f"not a turn ({type(exc).__name__})")


def read_transcript(path: str | Path) -> list[TranscriptTurn | UnreadableLine]:
    """Parse a transcript file: one turn, or one ``UnreadableLine``, per non-blank line. A file
    that cannot be read raises ``UsageError``."""
    source = Path(path)
    try:
        lines = source.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the transcript {source}: {exc.strerror}") from exc
    return [_read_line(line, f"{source}:{n}") for n, line in enumerate(lines, 1) if line.strip()]


def replay(
    runtime: ChatRuntime, turns: list[TranscriptTurn | UnreadableLine]
) -> Iterator[ChatResponse]:
    """Guard each recorded turn in order, one ChatResponse per line; an unreadable line is
    refused as a turn and replay goes on."""
    for turn in turns:
        if isinstance(turn, UnreadableLine):
            yield runtime.refuse_unreadable(turn.message)
        else:
            user_input, response, calls = turn
            yield runtime.check(user_input, response, calls)
