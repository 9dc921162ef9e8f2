"""Reading a pack file into plain JSON data plus a map from key paths to line numbers.

YAML (and JSON, which YAML 1.2 contains) is read as PyYAML's parse events (libyaml's, where PyYAML
has it), whose marks carry line numbers; we build the data from the events ourselves so that every
key path knows its line, duplicate keys are an error, and only JSON types come out
(docs/design/policy.md: errors name file, line and key).

Loading is safe against a hostile pack author (docs/policy.md, Safe loading):

- Plain scalars mean what YAML 1.2's core schema says. One that YAML 1.1 reads differently
  (``NO``, ``on``, ``0777``, ``1:20``, ``1e3``, ``1_000``) is refused at its line: quote it. A
  reader or a tool on YAML 1.1 would otherwise see another pack than the engine does.
- Aliases are refused (a 1 KB "billion laughs" expands to gigabytes), before anything is built.
- A map or list tagged as another type (``!!set``, ``!!omap``, ``!!python/object:...``) is
  refused: it would be read as a plain one here and as another value by a tool that honours it.
- Nesting is bounded (``MAX_DEPTH``), so no later stage can exhaust the stack.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
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
    "not_yaml",
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

    def duplicate_key(self, line: int, path: KeyPath) -> PolicyError:
        """A key written twice in one map, at the second one's ``line`` (0-based mark)."""
        return PolicyError(
            "duplicate key", file=self.source, line=line + 1, key=format_path(path), hint=self.hint
        )

    def ambiguous(self, text: str, old: Any, new: Any, line: int, path: KeyPath) -> PolicyError:
        """A plain scalar YAML 1.1 and 1.2 read differently (``old`` and ``new``)."""
        return PolicyError(
            f"the plain value {text!r} is ambiguous: YAML 1.1 reads it as "
            f"{_show(old)}, YAML 1.2 as {_show(new)}",
            file=self.source,
            line=line + 1,
            key=format_path(path) or None,
            hint=f'Quote it ("{text}") or write the value you mean in YAML 1.2 form.',
        )


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


_UNSET: Any = object()
_LIST: Any = object()  # the third member of a list's frame (a map's holds its pending key path)


class _Builder:
    """The data of a document from its parse events, with the line of every key path.

    What it builds is what composing the document into nodes and building the data from the
    nodes gave (``tests/support/reference_source.py``, pinned by
    tests/decide/test_reader.py), in one pass over the events: libyaml's composer asks the
    Python resolver for every node's tag, and each scalar was resolved and constructed again.
    A scalar's value depends only on its tag, text and style, so each distinct one is read
    once. The first error building the data is kept (``failure``) and raised once the whole
    stream has parsed: an alias, a depth or a syntax error anywhere comes first, as it did.
    """

    def __init__(self, lines: Lines, *, json_text: bool = False) -> None:
        self.lines = lines
        self.json_text = json_text  # JSON is YAML 1.2: its numbers are never ambiguous
        self.constructor = yaml.SafeLoader("")
        self.plain: dict[Any, tuple[str, Any]] = {}  # untagged plain scalars: tag and value
        self.known: dict[Any, tuple[str, Any]] = {}  # the others
        # per open collection: [container, its path, _LIST or the map's pending key path (None:
        # a key comes next)]
        self.stack: list[list[Any]] = []
        self.root: Any = _UNSET
        self.failure: Exception | None = None
        self.start_mark: Any = None  # the first document's
        self.handlers: dict[type, Callable[[Any], None]] = {
            yaml.ScalarEvent: self._scalar_event,
            yaml.MappingStartEvent: self._start,
            yaml.SequenceStartEvent: self._start,
            yaml.MappingEndEvent: self._end,
            yaml.SequenceEndEvent: self._end,
        }

    def event(self, event: Any) -> None:
        """Add one event of the first document (nothing more once building has failed)."""
        handler = self.handlers.get(type(event))
        if handler is None or self.failure is not None:
            return
        try:
            handler(event)
        except Exception as exc:  # noqa: BLE001 (raised after the stream has parsed)
            self.failure = exc

    def _start(self, event: Any) -> None:
        path = self._place(event)
        mapping = type(event) is yaml.MappingStartEvent
        collection_tag(event.tag, mapping=mapping, lines=self.lines, path=path)
        if mapping:
            self.stack.append([{}, path, None])
        else:
            self.stack.append([[], path, _LIST])

    def _end(self, _event: Any) -> None:
        self._add(self.stack.pop()[0])

    def _place(self, event: Any) -> KeyPath:
        """The key path of the node ``event`` starts (recording its line), checking that a
        collection is not a key."""
        path: KeyPath
        if not self.stack:
            path = ()
        else:
            container, where, pending = self.stack[-1]
            if pending is _LIST:
                path = (*where, len(container))
            elif pending is None:
                raise self.lines.error("keys must be strings, not maps or lists", where)
            else:
                path = pending
        self.lines.lines.setdefault(path, event.start_mark.line + 1)
        return path

    def _add(self, value: Any) -> None:
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        if frame[2] is _LIST:
            frame[0].append(value)
        else:
            frame[0][frame[2][-1]] = value
            frame[2] = None

    def _scalar_event(self, event: Any) -> None:
        if self.stack and self.stack[-1][2] is None:
            self._key(event, self.stack[-1])
            return
        path = self._place(event)
        self._add(self._scalar(event, path, value=True))

    def _key(self, event: Any, frame: list[Any]) -> None:
        path, out = frame[1], frame[0]
        key = self._scalar(event, (*path, str(event.value)), value=False)
        if not isinstance(key, str):
            raise self.lines.error(f"keys must be strings, not {key!r}", (*path, str(key)))
        if key in out:
            raise self.lines.duplicate_key(event.start_mark.line, (*path, key))
        frame[2] = (*path, key)
        self.lines.lines[frame[2]] = event.start_mark.line + 1

    def _scalar(self, event: Any, path: KeyPath, *, value: bool) -> Any:
        """A scalar's value, read once per distinct tag, text and style; a value (not a key)
        must have a JSON type's tag, as the composer resolves it."""
        plain = event.tag is None and not event.style  # then its implicit is (True, False)
        table = self.plain if plain else self.known
        memo = event.value if plain else (event.tag, event.value, event.implicit, bool(event.style))
        known = table.get(memo)
        if known is None:
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.constructor.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
            self._json_tag(tag, path, value=value)
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            known = table[memo] = (tag, self._value(node, path))
        else:
            self._json_tag(known[0], path, value=value)
        return known[1]

    def _json_tag(self, tag: str, path: KeyPath, *, value: bool) -> None:
        if value and tag not in _SCALARS:
            raise self.lines.error(f"{tag.rsplit(':', 1)[-1]} values are not JSON", path)

    def _value(self, node: Any, path: KeyPath) -> Any:
        """A scalar's value: quoted ones are strings; plain ones follow YAML 1.2 (see above)."""
        old = _construct(self.constructor, node, self.lines, path)
        implicit = self.constructor.resolve(yaml.ScalarNode, node.value, (True, False))  # type: ignore[no-untyped-call]
        if node.style or node.tag != implicit:  # "" (libyaml) or None: plain
            return old  # quoted, or tagged explicitly (``!!str 1``)
        new = core_scalar(node.value)
        if not self.json_text and not _same(old, new):
            raise self.lines.ambiguous(node.value, old, new, node.start_mark.line, path)
        return new


_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def collection_tag(tag: str | None, *, mapping: bool, lines: Lines, path: KeyPath) -> None:
    """Refuse a map or list tagged as anything but itself (``!!set``, ``!!omap``,
    ``!!python/object:...``): the engine would read it as a plain map or list, and a reader
    that honours the tag (or constructs it) another value."""
    if tag is None or tag in ("!", _MAP if mapping else _SEQ):
        return
    what = "map" if mapping else "list"
    raise lines.error(
        f"a {what} tagged {tag!r} is not JSON",
        path,
        hint=lines.hint or f"Remove the tag: packs take plain maps and lists, not {tag}.",
    )


def _construct(constructor: Any, node: Any, lines: Lines, path: KeyPath) -> Any:
    """A scalar's YAML 1.1 value; one its tag cannot read (``!!int x``, ``!!bool maybe``, a key
    tagged ``!foo``) is an error at its line, not a traceback."""
    try:
        return constructor.construct_object(node, deep=True)
    except Exception as exc:  # each constructor fails in its own way
        kind = node.tag.rsplit(":", 1)[-1]
        raise PolicyError(
            f"{node.value!r} is not a value of its tag ({kind})",
            file=lines.source,
            line=node.start_mark.line + 1,
            key=format_path(path) or None,
            hint="Remove the tag, or write a value of its type.",
        ) from exc


def _line(event: Any) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def _refuse(event: Any, depth: int, source: str, hint: str | None) -> None:
    """Aliases and deep nesting are refused as the parser meets them, before anything more is
    read (the parser keeps its own stack; nothing after it recurses past ``MAX_DEPTH``)."""
    if isinstance(event, yaml.AliasEvent):
        problem = f"YAML aliases are not supported (*{event.anchor})"
        fix = "Write the value out where it is used; packs take no aliases."
        raise PolicyError(problem, file=source, line=_line(event), hint=hint or fix)
    if depth > MAX_DEPTH:
        problem, fix = f"nested deeper than {MAX_DEPTH} levels", _FLATTEN
        raise PolicyError(problem, file=source, line=_line(event), hint=hint or fix)


class _Reader:
    """One pass over a stream's events: refusals first, then what the composer would refuse
    (a second document, an anchor used twice in the first), then the builder's first error."""

    def __init__(self, builder: _Builder, source: str, hint: str | None) -> None:
        self.builder, self.source, self.hint = builder, source, hint
        self.depth = self.documents = 0
        self.anchors: dict[str, Any] = {}
        self.composer: yaml.MarkedYAMLError | None = None

    def read(self, text: str) -> None:
        for event in yaml.parse(text, Loader=_PARSER):
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                self.depth += 1
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                self.depth -= 1
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents == 2:
                    self._composer_error(
                        "expected a single document in the stream", self.builder.start_mark,
                        "but found another document", event.start_mark,
                    )  # fmt: skip
            if kind is yaml.AliasEvent or self.depth > MAX_DEPTH:
                _refuse(event, self.depth, self.source, self.hint)
            if self.documents == 1:
                self._first_document(event)
        if self.composer is not None:
            raise self.composer

    def _first_document(self, event: Any) -> None:
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            if anchor in self.anchors:
                self._composer_error(
                    "found duplicate anchor; first occurrence", self.anchors[anchor],
                    "second occurrence", event.start_mark,
                )  # fmt: skip
            self.anchors[anchor] = event.start_mark
        if type(event) is yaml.DocumentStartEvent:
            self.builder.start_mark = event.start_mark
        self.builder.event(event)

    def _composer_error(self, context: str, first: Any, problem: str, mark: Any) -> None:
        if self.composer is None:
            self.composer = yaml.composer.ComposerError(context, first, problem, mark)


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


def not_yaml(exc: yaml.YAMLError, source: str, hint: str | None) -> PolicyError:
    """The ``PolicyError`` of text the YAML parser refused, at the line it names."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return PolicyError(f"not valid YAML/JSON: {exc.problem}", file=source, line=line, hint=hint)
    return PolicyError(f"not valid YAML/JSON: {exc}", file=source, hint=hint)


def parse_pack_text(
    text: str, source: str, *, hint: str | None = None, json_text: bool = False
) -> tuple[Any, Lines]:
    """Parse YAML or JSON text into JSON data and its line map (``hint``: see ``Lines``).

    ``json_text``: the text is JSON (already checked), whose plain numbers are YAML 1.2 ones.
    """
    lines = Lines(source, hint=hint)
    builder = _Builder(lines, json_text=json_text)
    try:
        _Reader(builder, source, hint).read(text)
    except yaml.YAMLError as exc:
        raise not_yaml(exc, source, hint) from exc
    if builder.failure is not None:
        raise builder.failure
    if builder.root is _UNSET:
        raise PolicyError("the file is empty", file=source, line=1, hint=hint)
    data = builder.root
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
