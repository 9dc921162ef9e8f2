"""Reading a pack file into plain JSON data plus a map from key paths to line numbers.

YAML (and JSON, which YAML 1.2 mostly contains) is *composed* into PyYAML nodes, whose marks
carry line numbers; we build the data from the nodes ourselves so that every key path knows its
line, duplicate keys are an error, and only JSON types come out (docs/design/policy.md: errors name
file, line and key).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from refusalkit.errors import PolicyError

__all__ = ["KeyPath", "Lines", "format_path", "parse_pack_text", "read_pack_source"]

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


_SCALARS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


class _Builder:
    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self.lines.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag not in _SCALARS:
            raise self.lines.error(f"{node.tag.rsplit(':', 1)[-1]} values are not JSON", path)
        return self.constructor.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.constructor.construct_object(key_node, deep=True)
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


def parse_pack_text(text: str, source: str, *, hint: str | None = None) -> tuple[Any, Lines]:
    """Parse YAML or JSON text into JSON data and its line map (``hint``: see ``Lines``)."""
    lines = Lines(source, hint=hint)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = f"not valid YAML/JSON: {exc.problem}"
        raise PolicyError(problem, file=source, line=line, hint=hint) from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"not valid YAML/JSON: {exc}", file=source, hint=hint) from exc
    if node is None:
        raise PolicyError("the file is empty", file=source, line=1, hint=hint)
    data = _Builder(lines).build(node, ())
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
    return parse_pack_text(text, str(source), hint=hint)
