"""Request mappings: how a refusalkit request becomes an engine's input (docs/design/engines.md).

A mapping is data, a small YAML file (``--mapping F``), validated on load; every error names
the file, the line and the key. Request paths are dotted (``args.path``, ``caller.agent``);
``.`` is the whole request. Keys::

    principal: {type: Agent, id: caller.agent}   # Cedar only: the entity of each role
    action:    {type: Action, id: tool}
    resource:  {type: Tool, id: tool}
    input: args                # what the engine sees: a request path (its value) ...
    input: {path: args.path, "*": args}          # ... or names → paths ("*" spreads an object)
    classes: {args.path: file-path}              # field class of a path (default: unclassified)
    reveal: [args.host]        # paths shown in clear in why-trails (tool always is)
    policy: {id: my-policy, version: "2026-07"}  # the record's policy id and version label

Cedar calls ``input`` its context; AGT its context dict; Rego and OPA their ``input``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from refusalkit._internal.source import Lines, read_pack_source
from refusalkit.errors import PolicyError

__all__ = [
    "MISSING",
    "EngineMapping",
    "EntitySpec",
    "load_mapping",
    "lookup",
    "mapping_from_data",
]

Path_ = tuple[str, ...]
MISSING: Any = object()
MAPPING_HINT = "Fix the mapping file; its keys are described in docs/design/engines.md."
UNCLASSIFIED = "unclassified"
_KEYS = frozenset({"principal", "action", "resource", "input", "classes", "reveal", "policy"})
_ROLES = ("principal", "action", "resource")


def parse_mapping_path(text: str) -> Path_:
    """``"args.path"`` → ``("args", "path")``; ``"."`` → ``()`` (the whole request)."""
    return () if text == "." else tuple(text.split("."))


def lookup(request: Any, path: Path_) -> Any:
    """The value at ``path`` in ``request``, or ``MISSING``."""
    value = request
    for part in path:
        if type(value) is not dict and not isinstance(value, Mapping):
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


@dataclass(frozen=True, slots=True)
class EntitySpec:
    """A Cedar entity made from the request: its type, and the request path of its id."""

    type: str
    id_path: Path_


@dataclass(frozen=True, slots=True)
class EngineMapping:
    """A validated mapping (module docstring). ``whole`` or ``names`` says what ``input`` is."""

    whole: Path_ | None = ()
    names: tuple[tuple[str, Path_], ...] = ()
    entities: tuple[EntitySpec, ...] = ()
    classes: Mapping[str, str] = field(default_factory=dict)
    reveal: frozenset[str] = frozenset({"tool"})
    policy_id: str | None = None
    policy_version: str | None = None
    source: str | None = None

    def engine_input(self, request: Mapping[str, Any]) -> dict[str, Any] | Any:
        """What the engine sees; names whose path is missing are left out."""
        if self.whole is not None:
            value = lookup(request, self.whole)
            return {} if value is MISSING else value
        out: dict[str, Any] = {}
        for name, path in self.names:
            value = lookup(request, path)
            if value is MISSING:
                continue
            if name == "*":
                if isinstance(value, Mapping):
                    out.update(value)
            else:
                out[name] = value
        return out

    def request_path(self, name: str) -> str | None:
        """The request path behind an input name (``path`` → ``args.path``), if the mapping says."""
        if self.whole is not None:
            return ".".join((*self.whole, name))
        for key, path in self.names:
            if key == name:
                return ".".join(path) or "."
        for key, path in self.names:
            if key == "*":
                return ".".join((*path, name))
        return None

    def field_class(self, path: str) -> str:
        """The field class of a request path (``unclassified`` unless the mapping names one)."""
        return self.classes.get(path, UNCLASSIFIED)


def load_mapping(path: str | Path) -> EngineMapping:
    """Read and validate a mapping file; raises ``PolicyError`` naming file, line and key."""
    try:
        data, lines = read_pack_source(path, what="mapping file")
    except PolicyError as exc:
        exc.hint = MAPPING_HINT  # the reader's message and place stand; the advice is ours
        raise
    return mapping_from_data(data, replace(lines, hint=MAPPING_HINT))


def mapping_from_data(data: Any, lines: Lines) -> EngineMapping:
    """Validate parsed mapping data (see ``load_mapping``)."""
    if not isinstance(data, dict):
        raise lines.error("a mapping file must be a YAML mapping of keys")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise lines.error(
            f"unknown key {unknown[0]!r}; known: {', '.join(sorted(_KEYS))}", (unknown[0],)
        )
    whole, names = _input(data.get("input", "."), lines)
    policy = _policy(data.get("policy", {}), lines)
    return EngineMapping(
        whole=whole,
        names=names,
        entities=tuple(_entity(data, role, lines) for role in _ROLES if role in data),
        classes=_classes(data.get("classes", {}), lines),
        reveal=frozenset({"tool", *_reveal(data.get("reveal", []), lines)}),
        policy_id=policy[0],
        policy_version=policy[1],
        source=lines.source,
    )


def _text(value: Any, lines: Lines, key: tuple[str | int, ...], what: str) -> str:
    if not isinstance(value, str) or not value:
        raise lines.error(f"{what} must be a non-empty string, not {value!r}", key)
    return value


def _path(value: Any, lines: Lines, key: tuple[str | int, ...]) -> Path_:
    text = _text(value, lines, key, "a request path")
    path = parse_mapping_path(text)
    if any(not part for part in path):
        raise lines.error(f"{text!r} is not a dotted request path (like args.path, or .)", key)
    return path


def _input(value: Any, lines: Lines) -> tuple[Path_ | None, tuple[tuple[str, Path_], ...]]:
    if isinstance(value, str):
        return _path(value, lines, ("input",)), ()
    if not isinstance(value, dict) or not value:
        raise lines.error("input must be a request path or a mapping of names to paths", ("input",))
    return None, tuple((name, _path(p, lines, ("input", name))) for name, p in value.items())


def _entity(data: dict[str, Any], role: str, lines: Lines) -> EntitySpec:
    spec = data[role]
    if not isinstance(spec, dict) or set(spec) != {"type", "id"}:
        raise lines.error(f"{role} must be {{type: TYPE, id: REQUEST-PATH}}", (role,))
    kind = _text(spec["type"], lines, (role, "type"), "an entity type")
    return EntitySpec(kind, _path(spec["id"], lines, (role, "id")))


def _classes(value: Any, lines: Lines) -> dict[str, str]:
    if not isinstance(value, dict):
        raise lines.error("classes must map request paths to field class names", ("classes",))
    for key, name in value.items():
        _path(key, lines, ("classes", key))
        _text(name, lines, ("classes", key), "a field class")
    return dict(value)


def _reveal(value: Any, lines: Lines) -> list[str]:
    if not isinstance(value, list):
        raise lines.error("reveal must be a list of request paths", ("reveal",))
    for index, item in enumerate(value):
        _path(item, lines, ("reveal", index))
    return list(value)


def _policy(value: Any, lines: Lines) -> tuple[str | None, str | None]:
    if not isinstance(value, dict) or not set(value) <= {"id", "version"}:
        raise lines.error("policy must be {id: NAME, version: LABEL}", ("policy",))
    out = [
        _text(value[k], lines, ("policy", k), k) if k in value else None for k in ("id", "version")
    ]
    return out[0], out[1]
