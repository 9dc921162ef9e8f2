"""The pack reader as plainly written: scan the events, compose the nodes, build the data from them.

``_internal/source.py`` reads a pack in one pass over the parser's events; this is the reading it
must agree with, value for value, line for line and error for error (tests/decide/test_reader.py):
refuse aliases and deep nesting over the whole stream, compose the single document into nodes
(which refuses a second document and an anchor used twice), then build JSON data from the nodes.
"""

from __future__ import annotations

from typing import Any

import yaml

from refusalkit._internal.source import (
    _PARSER,
    _SCALARS,
    MAX_DEPTH,
    KeyPath,
    Lines,
    _check_json_numbers,
    _construct,
    _same,
    collection_tag,
    core_scalar,
    not_yaml,
)
from refusalkit.errors import PolicyError

__all__ = ["reference_parse"]


class _Builder:
    def __init__(self, lines: Lines, *, json_text: bool = False) -> None:
        self.lines = lines
        self.json_text = json_text
        self.constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self.lines.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            mapping = isinstance(node, yaml.MappingNode)
            collection_tag(node.tag, mapping=mapping, lines=self.lines, path=path)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if node.tag not in _SCALARS:
            raise self.lines.error(f"{node.tag.rsplit(':', 1)[-1]} values are not JSON", path)
        return self._scalar(node, path)

    def _scalar(self, node: Any, path: KeyPath) -> Any:
        old = _construct(self.constructor, node, self.lines, path)
        implicit = self.constructor.resolve(yaml.ScalarNode, node.value, (True, False))  # type: ignore[no-untyped-call]
        if node.style or node.tag != implicit:
            return old
        new = core_scalar(node.value)
        if not self.json_text and not _same(old, new):
            raise self.lines.ambiguous(node.value, old, new, node.start_mark.line, path)
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
                raise self.lines.duplicate_key(key_node.start_mark.line, (*path, key))
            self.lines.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, (*path, key))
        return out


def _scan(text: str, source: str, hint: str | None) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=_PARSER):
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent):
            problem = f"YAML aliases are not supported (*{event.anchor})"
            fix = "Write the value out where it is used; packs take no aliases."
            raise PolicyError(problem, file=source, line=line, hint=hint or fix)
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                problem = f"nested deeper than {MAX_DEPTH} levels"
                fix = "Flatten the pack; no rule needs this much nesting."
                raise PolicyError(problem, file=source, line=line, hint=hint or fix)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


def reference_parse(
    text: str, source: str, *, hint: str | None = None, json_text: bool = False
) -> tuple[Any, Lines]:
    """``parse_pack_text`` as it was written before its one-pass reading."""
    lines = Lines(source, hint=hint)
    try:
        _scan(text, source, hint)
        node = yaml.compose(text, Loader=_PARSER)
    except yaml.YAMLError as exc:
        raise not_yaml(exc, source, hint) from exc
    if node is None:
        raise PolicyError("the file is empty", file=source, line=1, hint=hint)
    data = _Builder(lines, json_text=json_text).build(node, ())
    _check_json_numbers(data, lines)
    return data, lines
