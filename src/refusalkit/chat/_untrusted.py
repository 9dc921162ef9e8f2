"""Untrusted input made safe to check: texts with lone surrogates, JSON that RFC 8785 cannot hold.

The model writes the articulation and the tool-call arguments, so a prompt injection controls
them; the user types the input. Whatever they hold, the guard must reach a verdict
(docs/design/chat.md, "Untrusted input"):

* a text is made valid Unicode: each lone surrogate (which UTF-8, and so every digest, log and
  journal, cannot encode) becomes U+FFFD, so the checked text is the text that is recorded;
* a JSON value is *checkable* only when RFC 8785 can encode it: finite numbers, integers within
  ±(2**53 - 1) (RFC 8785 §3.2.2.3, I-JSON RFC 7493 §2.2), strings without lone surrogates, string
  keys, and nesting no deeper than ``MAX_DEPTH``. A tool call whose arguments are not checkable is
  denied ``unavailable`` (fail closed), never evaluated.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["MAX_DEPTH", "Parsed", "clean_text", "json_problem", "parse_arguments"]

MAX_DEPTH = 64  # nesting a tool's arguments may have; deeper is not checkable
_MAX_INT = 2**53 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: object) -> str:
    """``text`` (anything; ``str()`` of a non-string) with every lone surrogate as U+FFFD."""
    if not isinstance(text, str):
        try:
            text = str(text)
        except Exception:  # noqa: BLE001 - a hostile __str__ is still a text to check
            text = f"<unprintable {type(text).__name__}>"
    if type(text) is str and _encodable(text):
        return text  # the common case: one C-level UTF-8 pass, no regex scan
    return _SURROGATE.sub("\ufffd", text)


def _encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (UTF-8, RFC 3629 §3, cannot encode a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return "a string with a lone surrogate" if _SURROGATE.search(value) else None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if -_MAX_INT <= value <= _MAX_INT else "an integer beyond ±(2**53 - 1)"
    if isinstance(value, float):
        return None if math.isfinite(value) else "a number that is not finite (NaN, Infinity)"
    return f"a {type(value).__name__}, which is not JSON"


def json_problem(value: Any) -> str | None:
    """Why ``value`` is not a checkable JSON value, or ``None`` when it is (iterative: no
    recursion limit to hit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth > MAX_DEPTH:
                return f"nesting deeper than {MAX_DEPTH}"
            if isinstance(item, Mapping):
                for key in item:
                    if not isinstance(key, str) or _SURROGATE.search(key):
                        return "an object key that is not a valid string"
                children = list(item.values())
            else:
                children = list(item)
            stack.extend((child, depth + 1) for child in children)
            continue
        problem = _scalar_problem(item)
        if problem is not None:
            return problem
    return None


class Parsed(NamedTuple):
    """Tool-call arguments as parsed: the value, and why it is not checkable (``None`` if it is)."""

    value: Any
    problem: str | None


def parse_arguments(raw: Any) -> Parsed:
    """Parse an OpenAI ``arguments`` string (or take an already-parsed value) and vet it."""
    if not isinstance(raw, str | bytes | bytearray):
        return Parsed(raw, json_problem(raw))
    try:
        value = json.loads(raw)
    except RecursionError:
        return Parsed(None, f"nesting deeper than {MAX_DEPTH}")
    except (ValueError, TypeError):  # not JSON: kept as a string, as the model wrote it
        return Parsed(clean_text(raw), None)
    return Parsed(value, json_problem(value))
