"""Field paths: ``args.path``, list elements ``args.paths[*]`` and ``args.paths[0]``, and every
string anywhere below a field, ``args.**``.

A path is dotted keys; a key may be followed by ``[N]`` (element N of a list) or ``[*]`` (every
element, at most once per path). The keys before the first bracket are looked up as before
(``parts``); what follows is a short program of steps (``rest``) run on the value found there.
A ``[*]`` fans the condition out over the elements: how their outcomes combine is the rule's
business (any element for deny, block, audit and filters; every element for allow), see
``_pick`` in the engine. docs/policy.md, Lists, is the contract.

A final ``**`` segment (``args.**``) fans out the same way over every string anywhere in the
value found before it, in objects and lists at any depth, in document order (``walk_strings``);
numbers, booleans and null are not strings and are not visited. The trail names the string that
decided by its own path (``args.files[2].name``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, NamedTuple

__all__ = [
    "EACH",
    "MISSING",
    "WALK",
    "FieldPath",
    "FieldPathError",
    "Step",
    "StepKind",
    "element_path",
    "parse_field_path",
    "run_steps",
    "walk_strings",
]

MISSING: Any = object()  # a value the request does not have (a missing field is unknown)
_SEGMENT = re.compile(r"([^\[\]]+)((?:\[(?:\*|[0-9]+)\])*)")
_BRACKET = re.compile(r"\[(\*|[0-9]+)\]")


class StepKind(Enum):
    """What one step after the plain keys does."""

    KEY = "key"  # a key of an object
    INDEX = "index"  # element N of a list
    EACH = "each"  # every element of a list
    PARSE = "parse"  # the field's kind parses the value (docs/policy.md, Kinds)
    WALK = "walk"  # every string anywhere below (a final ``**``)


class Step(NamedTuple):
    """One step: its kind and argument (a key, an index, or the kind's parse function)."""

    kind: StepKind
    arg: Any = None


EACH = Step(StepKind.EACH)
WALK = Step(StepKind.WALK)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}")


class FieldPathError(ValueError):
    """A field path that cannot be read; the message says what is allowed."""


class FieldPath(NamedTuple):
    """A parsed field path: the plain keys first, then the steps after the first bracket."""

    text: str
    parts: tuple[str, ...]
    rest: tuple[Step, ...]


@functools.lru_cache(maxsize=4096)
def parse_field_path(text: str) -> FieldPath:
    """Parse ``a.b[*].c`` or ``a.**``; raises ``FieldPathError`` for a malformed path, two
    ``[*]``, or a ``**`` that is not the last segment of a path without ``[*]``. Kept per path
    (a pack names a few fields in many rules); the result is immutable."""
    steps: list[Step] = []
    segments = text.split(".")
    if "**" in segments:
        return _parse_walk(text, segments)
    for segment in segments:
        found = _SEGMENT.fullmatch(segment)
        if found is None:
            raise FieldPathError(
                f"field path {text!r}: after a key only [N] or [*] may follow, e.g. args.paths[*]"
            )
        steps.append(Step(StepKind.KEY, found.group(1)))
        brackets = _BRACKET.findall(found.group(2))
        steps.extend(EACH if item == "*" else Step(StepKind.INDEX, int(item)) for item in brackets)
    if steps.count(EACH) > 1:
        raise FieldPathError(f"field path {text!r}: at most one [*] per path")
    plain = next((i for i, s in enumerate(steps) if s.kind is not StepKind.KEY), len(steps))
    return FieldPath(text, tuple(s.arg for s in steps[:plain]), tuple(steps[plain:]))


def _parse_walk(text: str, segments: list[str]) -> FieldPath:
    if segments.index("**") != len(segments) - 1 or len(segments) < 2:
        raise FieldPathError(f"field path {text!r}: ** comes last, after plain keys, e.g. args.**")
    head = parse_field_path(".".join(segments[:-1]))
    if head.rest:
        raise FieldPathError(f"field path {text!r}: ** follows plain keys only, e.g. args.**")
    return FieldPath(text, head.parts, (WALK,))


@functools.lru_cache(maxsize=1024)
def _key_text(key: str) -> str:
    """A key as the trail names it: plain identifiers literally, any other key as ``*`` (a
    key is request data, and an odd one may be a value in disguise)."""
    return f".{key}" if _PLAIN_KEY.fullmatch(key) else ".*"


def walk_strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string anywhere in a JSON value, with its path below ``value``, in document order.

    Iterative (no recursion limit); object keys are not visited, only values.
    """
    if type(value) is dict:  # flat arguments (strings only) at once
        flat = [(path + _key_text(k), v) for k, v in value.items() if type(v) is str]
        if len(flat) == len(value):
            return flat
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if type(item) is str:
            found.append((where, item))
        elif isinstance(item, dict):
            stack.extend((where + _key_text(k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return found


def _step(value: Any, step: Step) -> Any:
    kind = step.kind
    if kind is StepKind.KEY:
        return value.get(step.arg, MISSING) if isinstance(value, dict) else MISSING
    if kind is StepKind.INDEX:
        in_range = isinstance(value, list) and step.arg < len(value)
        return value[step.arg] if in_range else MISSING
    parse: Callable[[Any], Any] = step.arg
    return parse(value)


def run_steps(value: Any, steps: Sequence[Step]) -> Any:
    """Apply steps without ``[*]`` to a value; ``MISSING`` as soon as one cannot apply."""
    for step in steps:
        if value is MISSING:
            return MISSING
        value = _step(value, step)
    return value


def element_path(path: str, index: int) -> str:
    """``args.paths[*]`` as element ``index`` of it: ``args.paths[2]``."""
    return path.replace("[*]", f"[{index}]", 1)
