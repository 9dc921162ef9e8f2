"""Replay: audit a recorded conversation offline (``refusalkit chat replay``).

A transcript is JSONL, one turn a line: ``{"input": ..., "response": ..., "tool_calls": [...]}``
(tool calls as ``{"tool", "args"}`` or OpenAI ``{"function": {"name", "arguments"}}``). Every
turn goes through the runtime's stub path, so replaying the same transcript with the same packs
gives the same surfaces, verdicts and tags (decision ids and timestamps are fresh).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from refusalkit.chat._response import ChatResponse
from refusalkit.chat._runtime import ChatRuntime
from refusalkit.chat._verdict import ToolCall
from refusalkit.errors import UsageError

__all__ = ["TranscriptTurn", "read_transcript", "replay"]

TranscriptTurn = tuple[str, str, tuple[ToolCall, ...]]


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
            hint='Each line: {"input": ..., "response": ..., "tool_calls": [...]}',
        )
    response = obj.get("response")
    if not isinstance(response, str):
        raise UsageError(f"{where}: a turn needs a string `response`")
    calls: Any = obj.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise UsageError(f"{where}: `tool_calls` must be a list of objects")
    return obj["input"], response, tuple(ToolCall.from_obj(c) for c in calls)


def read_transcript(path: str | Path) -> list[TranscriptTurn]:
    """Parse a transcript file; raises ``UsageError`` naming the line at fault."""
    source = Path(path)
    try:
        lines = source.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the transcript {source}: {exc.strerror}") from exc
    return [_parse_line(line, f"{source}:{n}") for n, line in enumerate(lines, 1) if line.strip()]


def replay(runtime: ChatRuntime, turns: list[TranscriptTurn]) -> Iterator[ChatResponse]:
    """Guard each recorded turn in order; yields one ChatResponse per turn."""
    for user_input, response, calls in turns:
        yield runtime.check(user_input, response, calls)
