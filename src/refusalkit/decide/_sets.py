"""Named sets: a list of values written once, at the top of a pack, and used by name.

A pack's top-level ``sets:`` maps a name to a list of strings, or to ``{values, description,
source}`` (``source`` says where a derived list comes from: its project, licence and version).
A condition's operand, or one item of its list, may be ``{set: NAME}``: the set's values are put
in its place, in order, before the condition is compiled (docs/policy.md, Named sets). The
trail names the set when nothing matched (``glob set credential-files``) and the alternative
that matched when one did.

Also here: the load error for a bare ``tool:`` scalar with glob characters, which would be
compared literally (``tool: "files.*"`` names no tool).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusalkit._internal.source import KeyPath, Lines

__all__ = ["SET_OPERATORS", "NamedSets", "bare_glob_error"]

SET_OPERATORS = ("glob", "regex", "prefix", "under", "above", "in")
_GLOB_CHARS = frozenset("*?")


class NamedSets:
    """The pack's named sets, by name; ``expand`` resolves the references of one condition."""

    __slots__ = ("_lines", "_values")

    def __init__(self, raw: Mapping[str, Any], lines: Lines) -> None:
        self._lines = lines
        self._values: dict[str, list[Any]] = {}
        for name, spec in raw.items():
            values = spec.get("values", ()) if isinstance(spec, Mapping) else spec
            self._values[name] = list(values)

    def expand(self, raw: Any, where: KeyPath) -> tuple[Any, str | None]:
        """The condition with every ``{set: NAME}`` replaced by the set's values, and the
        trail's text for "nothing matched" when a set was named (else None)."""
        if not isinstance(raw, Mapping):
            return raw, None
        out = dict(raw)
        label: str | None = None
        for op in SET_OPERATORS:
            if op not in raw:
                continue
            values, names = self._operand(raw[op], (*where, op))
            out[op] = values
            if names:
                label = f"{op} set {', '.join(names)}"
        if isinstance(raw.get("not"), Mapping):
            inner, inner_label = self.expand(raw["not"], (*where, "not"))
            out["not"] = inner
            if inner_label is not None:
                label = f"not ({inner_label})"
        return out, label

    def _operand(self, operand: Any, where: KeyPath) -> tuple[Any, list[str]]:
        items = operand if isinstance(operand, list) else [operand]
        if not any(isinstance(item, Mapping) for item in items):
            return operand, []
        values: list[Any] = []
        names: list[str] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                values.append(item)
                continue
            name = item.get("set")
            at = (*where, index) if isinstance(operand, list) else where
            if name not in self._values:
                known = ", ".join(sorted(self._values)) or "none"
                raise self._lines.error(
                    f"no set named {name!r} (declared: {known})",
                    at,
                    hint="Declare it under the top-level `sets:` key, or fix the name.",
                )
            values.extend(self._values[name])
            names.append(name)
        return values, names


def bare_glob_error(raw: Any, where: KeyPath, lines: Lines) -> None:
    """A bare ``tool:`` string with ``*`` or ``?`` is compared literally: a load error."""
    if isinstance(raw, str) and _GLOB_CHARS & set(raw):
        raise lines.error(
            f"tool: {raw!r} is compared literally, so it names no tool",
            where,
            hint=f'To match tool names by pattern write tool: {{glob: "{raw}"}}.',
        )
