"""Reading a pack file into plain JSON data plus a map from key paths to line numbers.

YAML (and JSON, which YAML 1.2 contains) is *composed* into PyYAML nodes, whose marks carry line
numbers; we build the data from the nodes ourselves so that every key path knows its line,
duplicate keys are an error, and only JSON types come out (docs/design/policy.md: errors name
file, line and key).

Loading is safe against a hostile pack author (docs/policy.md, Safe loading):

- Plain scalars mean what YAML 1.2's core schema says. One that YAML 1.1 reads differently
  (``NO``, ``on``, ``0777``, ``1:20``, ``1e3``, ``1_000``) is refused at its line: quote it. A
  reader or a tool on YAML 1.1 would otherwise see another pack than the engine does.
- Aliases are refused (a 1 KB "billion laughs" expands to gigabytes), before anything is built.
- Nesting is bounded (``MAX_DEPTH``), so no later stage can exhaust the stack.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from refusalkit.errors import PolicyError

__all__ = [
    "MAX_DEPTH",
    "KeyPath",
    "Lines",
    "check_depth",
    "format_path",
    "parse_pack_text",
    "read_pack_source",
]

MAX_DEPTH = 32  # nested maps and lists; a real pack needs about ten
_FLATTEN = "Flatten the pack; no rule needs this much nesting."

KeyPath = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """``("rules", 3, "when")`` → ``rules[3].when``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass(frozen=True, slots=True)
class Lines:
    """Line numbers (1-based) of the key paths of one source file."""

    source: str
    lines: dict[KeyPath, int] = field(default_factory=dict)
    hint: str | None = None  # the hint of errors in this file (None: PolicyError's, for a pack)

    def line(self, path: Sequence[str | int]) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        key = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), None)

    def error(
        self, message: str, path: Sequence[str | int] = (), hint: str | None = None
    ) -> PolicyError:
        """A ``PolicyError`` naming this file, the line of ``path`` and the key."""
        key = format_path(path) or None
        line = self.line(path)
        return PolicyError(message, file=self.source, line=line, key=key, hint=hint or self.hint)


# libyaml's parser when PyYAML was built with it (the same events and nodes, with the same marks,
# several times faster on a large pack), else PyYAML's own.
_PARSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SCALARS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


# YAML 1.2.2 §10.3.2, the core schema's tag resolution of plain scalars.
_NULL = re.compile(r"null|Null|NULL|~|")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"[-+]?[0-9]+")
_INT8 = re.compile(r"0o[0-7]+")
_INT16 = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL = re.compile(r"[-+]?\.(inf|Inf|INF)|\.nan|\.NaN|\.NAN")


def core_scalar(text: str) -> Any:
    """A plain scalar as the YAML 1.2 core schema reads it."""
    if _NULL.fullmatch(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    return _core_number(text)


def _core_number(text: str) -> Any:
    if _INT10.fullmatch(text):
        return int(text)
    if _INT8.fullmatch(text):
        return int(text[2:], 8)
    if _INT16.fullmatch(text):
        return int(text[2:], 16)
    if _SPECIAL.fullmatch(text):
        return float(text.lower().replace(".", ""))  # "+inf", "-inf", "nan"
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _show(value: Any) -> str:
    return (
        json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    )


class _Builder:
    def __init__(self, lines: Lines, *, json_text: bool = False) -> None:
        self.lines = lines
        self.json_text = json_text  # JSON is YAML 1.2: its numbers are never ambiguous
        self.constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self.lines.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag not in _SCALARS:
            raise self.lines.error(f"{node.tag.rsplit(':', 1)[-1]} values are not JSON", path)
        return self._scalar(node, path)

    def _scalar(self, node: Any, path: KeyPath) -> Any:
        """A scalar's value: quoted ones are strings; plain ones follow YAML 1.2 (see above)."""
        old = self.constructor.construct_object(node, deep=True)
        implicit = self.constructor.resolve(yaml.ScalarNode, node.value, (True, False))  # type: ignore[no-untyped-call]
        if node.style or node.tag != implicit:  # "" (libyaml) or None: plain
            return old  # quoted, or tagged explicitly (``!!str 1``)
        new = core_scalar(node.value)
        if not self.json_text and not _same(old, new):
            raise PolicyError(
                f"the plain value {node.value!r} is ambiguous: YAML 1.1 reads it as "
                f"{_show(old)}, YAML 1.2 as {_show(new)}",
                file=self.lines.source,
                line=node.start_mark.line + 1,
                key=format_path(path) or None,
                hint=f'Quote it ("{node.value}") or write the value you mean in YAML 1.2 form.',
            )
        return new

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.lines.error("keys must be strings, not maps or lists", path)
            key = self._scalar(key_node, (*path, str(key_node.value)))
            if not isinstance(key, str):
                raise self.lines.error(f"keys must be strings, not {key!r}", (*path, str(key)))
            if key in out:
                line = key_node.start_mark.line + 1
                raise PolicyError(
                    "duplicate key",
                    file=self.lines.source,
                    line=line,
                    key=format_path((*path, key)),
                    hint=self.lines.hint,
                )
            self.lines.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, (*path, key))
        return out


def _line(event: Any) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def _scan(text: str, source: str, hint: str | None) -> None:
    """Refuse aliases and deep nesting from the event stream, before anything is composed (the
    parser keeps its own stack; the composer and everything after it recurse)."""
    depth = 0
    for event in yaml.parse(text, Loader=_PARSER):
        if isinstance(event, yaml.AliasEvent):
            problem = f"YAML aliases are not supported (*{event.anchor})"
            fix = "Write the value out where it is used; packs take no aliases."
            raise PolicyError(problem, file=source, line=_line(event), hint=hint or fix)
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                problem, fix = f"nested deeper than {MAX_DEPTH} levels", _FLATTEN
                raise PolicyError(problem, file=source, line=_line(event), hint=hint or fix)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


def check_depth(data: Any, lines: Lines) -> None:
    """Refuse data nested deeper than ``MAX_DEPTH`` (for packs given as data, not text)."""
    stack: list[tuple[Any, KeyPath]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise lines.error(f"nested deeper than {MAX_DEPTH} levels", path[:MAX_DEPTH], _FLATTEN)
        if isinstance(value, dict):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))


def parse_pack_text(
    text: str, source: str, *, hint: str | None = None, json_text: bool = False
) -> tuple[Any, Lines]:
    """Parse YAML or JSON text into JSON data and its line map (``hint``: see ``Lines``).

    ``json_text``: the text is JSON (already checked), whose plain numbers are YAML 1.2 ones.
    """
    lines = Lines(source, hint=hint)
    try:
        _scan(text, source, hint)
        node = yaml.compose(text, Loader=_PARSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = f"not valid YAML/JSON: {exc.problem}"
        raise PolicyError(problem, file=source, line=line, hint=hint) from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"not valid YAML/JSON: {exc}", file=source, hint=hint) from exc
    if node is None:
        raise PolicyError("the file is empty", file=source, line=1, hint=hint)
    data = _Builder(lines, json_text=json_text).build(node, ())
    _check_json_numbers(data, lines)
    return data, lines


def _check_json_numbers(data: Any, lines: Lines, path: KeyPath = ()) -> None:
    if isinstance(data, float) and not math.isfinite(data):
        raise lines.error("NaN and infinities are not JSON numbers", path)
    if isinstance(data, dict):
        for key, value in data.items():
            _check_json_numbers(value, lines, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_json_numbers(value, lines, (*path, index))


_CASES_HINT = "Fix the cases file (a YAML list of request + expect), then run `policy test` again."


def read_pack_source(path: str | Path, *, what: str = "policy pack") -> tuple[Any, Lines]:
    """Read and parse a pack (or case) file; raises ``PolicyError`` naming the file (and line).

    ``what`` names the kind of file in messages: "policy pack" or "cases file".
    """
    hint = _CASES_HINT if what == "cases file" else None
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyError(
            "no such file", file=str(source), hint=f"Check the path of the {what}."
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(
            f"cannot read the {what}: {exc}",
            file=str(source),
            hint=f"The {what} must be a readable UTF-8 YAML or JSON file.",
        ) from exc
    if source.suffix.lower() == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolicyError(
                f"not valid JSON: {exc.msg}", file=str(source), line=exc.lineno, hint=hint
            ) from exc
    json_text = source.suffix.lower() == ".json"
    return parse_pack_text(text, str(source), hint=hint, json_text=json_text)
