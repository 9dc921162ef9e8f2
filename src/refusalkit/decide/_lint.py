"""``policy lint``: a valid pack that probably does not say what its author meant.

Each warning names the file, the line, the rule and what to do (docs/policy.md, Lint). The
checks are conservative: a warning is a rule that, as written, cannot do its job.

- ``never-matches``: a rule that can never match (a tool no agent is granted, an empty range);
- ``shadowed``: a rule an earlier rule of higher or equal severity always pre-empts;
- ``broad-deny``: a deny or block rule with no ``tool`` condition on an ``args`` field, which is
  unknown (so it matches, fail closed) for every tool that lacks the field;
- ``raw-path``: a glob or prefix on a path-like field whose class has no ``kind: path``;
- ``start-anchored-shell``: a regex anchored only at the start on a shell-like field whose class
  has no ``kind: shell`` (``ls; rm -rf /`` starts with ``ls`` too);
- ``boolean-in-list``: an ``in`` list that mixes booleans with strings;
- ``free-form-flags``: an allow rule that names a command (``argv[0]``) but lets it take flags
  it does not list (``git diff --output F`` writes, ``grep -r`` reads every file below).

(``args.**`` is exempt from ``broad-deny``: a request without arguments has no strings, which
is false, not unknown.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from refusalkit._internal.source import KeyPath, Lines, format_path, read_pack_source
from refusalkit.decide._compile import UNCLASSIFIED
from refusalkit.decide._conditions import TRUE, compile_condition
from refusalkit.decide._glob import compile_glob
from refusalkit.decide._logic import Severity
from refusalkit.decide._pack import Pack
from refusalkit.decide._sets import NamedSets

__all__ = ["LintCode", "LintWarning", "lint_data", "lint_pack", "lint_text"]

_PATH_NAMES = ("path", "file", "dir", "directory", "src", "dst", "source", "dest", "target", "cwd")
_SHELL_NAMES = ("command", "cmd", "shell", "script")


class LintCode(Enum):
    """What a warning is about (stable strings: tools may filter on them)."""

    NEVER_MATCHES = "never-matches"
    SHADOWED = "shadowed"
    BROAD_DENY = "broad-deny"
    RAW_PATH = "raw-path"
    START_ANCHORED_SHELL = "start-anchored-shell"
    BOOLEAN_IN_LIST = "boolean-in-list"
    FREE_FORM_FLAGS = "free-form-flags"


@dataclass(frozen=True, slots=True)
class LintWarning:
    """One warning: where, which rule, what is wrong and what to do."""

    code: LintCode
    rule: str
    message: str
    hint: str
    file: str
    line: int | None
    key: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: warning[{self.code.value}] rule {self.rule!r}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The warning as JSON data (``policy lint --json``)."""
        return {
            "code": self.code.value,
            "rule": self.rule,
            "message": self.message,
            "hint": self.hint,
            "file": self.file,
            "line": self.line,
            "key": self.key,
        }


Branch = tuple[KeyPath, Mapping[str, Any]]


def _branches(rule: Mapping[str, Any], index: int) -> list[Branch]:
    when = rule.get("when")
    base: KeyPath = ("rules", index, "when")
    if when is None:
        return [(base, {})]
    if isinstance(when, list):
        return [((*base, j), conds) for j, conds in enumerate(when)]
    return [(base, when)]


def _leaf(field: str) -> str:
    """The last key of a field path, without brackets: ``args.paths[*]`` → ``paths``."""
    return field.rsplit(".", 1)[-1].split("[", 1)[0].lower()


class _Linter:
    def __init__(self, data: Mapping[str, Any], lines: Lines) -> None:
        self.data = data
        self.lines = lines
        self.classes: Mapping[str, Any] = data.get("field_classes", {})
        self.sets = NamedSets(data.get("sets", {}), lines)
        self.found: list[LintWarning] = []

    def warn(self, code: LintCode, rule: str, where: KeyPath, message: str, hint: str) -> None:
        self.found.append(
            LintWarning(
                code, rule, message, hint, self.lines.source, self.lines.line(where),
                format_path(where),
            )
        )  # fmt: skip

    def kind(self, cond: Any) -> str | None:
        name = cond.get("class", UNCLASSIFIED) if isinstance(cond, Mapping) else UNCLASSIFIED
        spec = self.classes.get(name, {})
        return spec.get("kind") if isinstance(spec, Mapping) else None

    def run(self) -> list[LintWarning]:
        rules = self.data.get("rules", [])
        for index, rule in enumerate(rules):
            for where, conds in _branches(rule, index):
                self.tools(rule, where, conds)
                self.broad(rule, where, conds)
                self.typed(rule, where, conds)
                self.flags(rule, where, conds)
                for field, cond in conds.items():
                    self.condition(rule, (*where, field), field, cond)
            self.shadowed(rules, index)
        return sorted(self.found, key=lambda w: (w.line or 0, w.code.value))

    # -- checks -----------------------------------------------------------------------------------

    def tools(self, rule: Mapping[str, Any], where: KeyPath, conds: Mapping[str, Any]) -> None:
        """A tool condition that no capability grants: the @scope stage refuses first."""
        caps = self.data.get("capabilities")
        names = _tool_names(conds.get("tool"))
        if caps is None or not names:
            return
        globs = [compile_glob(g) for grants in caps.values() for g in grants]
        lost = [name for name in names if not any(g(name) for g in globs)]
        if len(lost) == len(names):
            self.warn(
                LintCode.NEVER_MATCHES, rule["id"], (*where, "tool"),
                f"no agent is granted {', '.join(lost)}, so @scope refuses before this rule",
                "Grant the tool under capabilities, or remove the rule.",
            )  # fmt: skip

    def typed(self, rule: Mapping[str, Any], where: KeyPath, conds: Mapping[str, Any]) -> None:
        """An allow or audit condition whose test needs a type the tool's schema rules out: it
        is unknown for every valid call, and unknown never allows."""
        if Severity.of(rule["effect"]) >= Severity.DENY:
            return
        schemas = self.data.get("tools", {})
        for tool in _tool_names(conds.get("tool")):
            props = schemas.get(tool, {}).get("args", {})
            props = props.get("properties", {}) if isinstance(props, Mapping) else {}
            for field, cond in conds.items():
                declared = _declared_type(props, field)
                needed = _needed_type(cond) if self.kind(cond) is None else None
                usable = {"number" if t == "integer" else t for t in declared or ()}
                if declared is not None and needed is not None and needed not in usable:
                    self.warn(
                        LintCode.NEVER_MATCHES, rule["id"], (*where, field),
                        f"{field} is {' or '.join(declared)} in the schema of {tool}, but the "
                        f"condition tests a {needed}: it is unknown for every valid call",
                        "Test the field with a condition of its type, or fix the schema.",
                    )  # fmt: skip

    def broad(self, rule: Mapping[str, Any], where: KeyPath, conds: Mapping[str, Any]) -> None:
        if Severity.of(rule["effect"]) < Severity.DENY or "tool" in conds:
            return
        fields = [f for f in conds if f.startswith("args.") and not f.endswith(".**")]
        if not fields:
            return
        self.warn(
            LintCode.BROAD_DENY, rule["id"], where,
            f"no tool condition: for every tool whose calls lack {fields[0]}, the condition is "
            f"unknown, so this {rule['effect']} rule refuses them all",
            'Add the tools it is meant for to its `when`, e.g. tool: {glob: "fs.*"}.',
        )  # fmt: skip

    def flags(self, rule: Mapping[str, Any], where: KeyPath, conds: Mapping[str, Any]) -> None:
        """An allow branch that names a command and accepts a flag nobody listed."""
        if rule["effect"] != "allow":
            return
        for field, cond in conds.items():
            if not field.endswith(".argv[0]") or self.kind(cond) != "shell":
                continue
            words = field[: -len("[0]")] + "[*]"
            each = conds.get(words)
            probe = _free_flag(each, self.sets, (*where, words)) if each is not None else "any"
            if probe is None:
                continue
            said = "any word" if probe == "any" else f"a flag it does not list ({probe})"
            self.warn(
                LintCode.FREE_FORM_FLAGS, rule["id"], (*where, words if each else field),
                f"the command named by {field} may take {said}: a flag can write files or "
                "read a whole tree (git diff --output F, grep -r)",
                f"List the flags the command accepts in {words}, e.g. "
                "{regex: '^(-[inl]+|--stat|[^-][^=]*)$'}.",
            )  # fmt: skip

    def condition(self, rule: Mapping[str, Any], where: KeyPath, field: str, cond: Any) -> None:
        if not isinstance(cond, Mapping):
            return
        leaf, kind = _leaf(field), self.kind(cond)
        name = cond.get("class", UNCLASSIFIED)
        path_like = any(p in leaf for p in _PATH_NAMES) or "path" in str(name)
        if path_like and kind != "path" and ({"glob", "prefix"} & cond.keys()):
            op = "glob" if "glob" in cond else "prefix"
            self.warn(
                LintCode.RAW_PATH, rule["id"], (*where, op),
                f"a {op} on {field}, whose class {name!r} has no kind: path, tests the raw "
                "string: '/a//b', '/a/./b' and '/x/../a/b' are other spellings of '/a/b'",
                f"Declare kind: path on field class {name!r} (under field_classes).",
            )  # fmt: skip
        shell_like = leaf in _SHELL_NAMES or "shell" in str(name) or "command" in str(name)
        if shell_like and kind != "shell":
            self.anchored(rule, where, field, cond)
        self.booleans(rule, where, cond)
        self.empty_range(rule, where, cond)

    def anchored(self, rule: Mapping[str, Any], where: KeyPath, field: str, cond: Any) -> None:
        patterns = cond.get("regex")
        patterns = patterns if isinstance(patterns, list) else [patterns]
        loose = [p for p in patterns if isinstance(p, str) and p.startswith("^")
                 and not p.endswith("$")]  # fmt: skip
        if loose:
            self.warn(
                LintCode.START_ANCHORED_SHELL, rule["id"], (*where, "regex"),
                f"the regex {loose[0]!r} on {field} is anchored only at the start: "
                "'ls; rm -rf /' and 'ls $(rm -rf /)' start with 'ls' too",
                "Give the class kind: shell and test args.command.argv[0] (and argv[*]).",
            )  # fmt: skip

    def booleans(self, rule: Mapping[str, Any], where: KeyPath, cond: Any) -> None:
        items = cond.get("in")
        if not isinstance(items, list):
            return
        bools = [i for i in items if isinstance(i, bool)]
        if bools and any(isinstance(i, str) for i in items):
            self.warn(
                LintCode.BOOLEAN_IN_LIST, rule["id"], (*where, "in"),
                f"the list mixes strings with {json.dumps(bools[0])}: did a YAML 1.1 tool turn "
                "a word such as NO, off or yes into a boolean?",
                "Quote every string in the list.",
            )  # fmt: skip

    def empty_range(self, rule: Mapping[str, Any], where: KeyPath, cond: Any) -> None:
        bounds = cond.get("range")
        if not isinstance(bounds, Mapping):
            return
        low, high = bounds.get("min"), bounds.get("max")
        if low is not None and high is not None and low > high:
            self.warn(
                LintCode.NEVER_MATCHES, rule["id"], (*where, "range"),
                f"range min {low} is above max {high}: no number is in it",
                "Swap min and max.",
            )  # fmt: skip

    def shadowed(self, rules: list[Mapping[str, Any]], index: int) -> None:
        later = rules[index]
        for earlier in rules[:index]:
            if _pre_empts(earlier, later) and all(
                any(_covers(b1, b2) for _, b1 in _branches(earlier, 0))
                for _, b2 in _branches(later, 0)
            ):
                self.warn(
                    LintCode.SHADOWED, later["id"], ("rules", index, "id"),
                    f"whenever it matches, the earlier {earlier['effect']} rule "
                    f"{earlier['id']!r} matches too and decides",
                    "Move it above that rule, narrow that rule, or remove this one.",
                )  # fmt: skip
                return


def _pre_empts(earlier: Mapping[str, Any], later: Mapping[str, Any]) -> bool:
    """Whether ``earlier`` decides over ``later`` when both match (audit beats allow, so
    audit is only pre-empted by audit, deny or block; docs/policy.md, Rules)."""
    first, then = str(earlier["effect"]), str(later["effect"])
    if then == "audit":
        return first != "allow"
    return first != "audit" and Severity.of(first) >= Severity.of(then)


_STRING_OPS = frozenset({"glob", "regex", "prefix", "cidr"})


# Flags no command has: an ``argv[*]`` condition that accepts one accepts flags it never named.
_PROBE_FLAGS = ("--refusalkit-lint-probe", "-Y")


def _free_flag(cond: Any, sets: NamedSets, where: KeyPath) -> str | None:
    """The probe flag an ``argv[*]`` condition accepts, or None when it accepts neither."""
    raw, _ = sets.expand(cond, where)
    try:
        check = compile_condition(raw).check
    except ValueError:
        return None
    return next((flag for flag in _PROBE_FLAGS if check(flag) is TRUE), None)


def _needed_type(cond: Any) -> str | None:
    """The JSON type a condition can only be true on (None: several, or not known)."""
    if not isinstance(cond, Mapping):
        return None
    if _STRING_OPS & cond.keys():
        return "string"
    return "number" if "range" in cond else None


def _declared_type(props: Mapping[str, Any], field: str) -> list[str] | None:
    """The JSON types a tool schema allows for ``args.<name>`` (None: not declared)."""
    if not field.startswith("args.") or field.count(".") != 1 or "[" in field:
        return None
    spec = props.get(field[5:])
    kinds = spec.get("type") if isinstance(spec, Mapping) else None
    types = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(types, list):
        return None
    return [str(t) for t in types]


def _tool_names(cond: Any) -> list[str]:
    """The exact tool names a tool condition lists (empty: not a plain list of names)."""
    if isinstance(cond, str):
        return [cond]
    if isinstance(cond, Mapping) and set(cond) <= {"in", "class"}:
        items = cond.get("in")
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            return list(items)
    return []


def _covers(wide: Mapping[str, Any], narrow: Mapping[str, Any]) -> bool:
    """Whether every condition of ``wide`` holds whenever ``narrow``'s do (conservatively:
    the same condition on the same field, or a tool condition that accepts every tool the
    narrow branch names)."""
    for field, cond in wide.items():
        if field not in narrow:
            return False
        if narrow[field] == cond:
            continue
        names = _tool_names(narrow[field]) if field == "tool" else []
        if not names:
            return False
        check = compile_condition(cond).check
        if any(check(name) is not TRUE for name in names):
            return False
    return True


def lint_data(data: Mapping[str, Any], lines: Lines) -> list[LintWarning]:
    """The warnings of a valid pack's data (validate it first: ``Pack.from_mapping``)."""
    return _Linter(data, lines).run()


def lint_pack(path: str | Path) -> tuple[Pack, list[LintWarning]]:
    """Load a pack (errors as ``load_pack``) and lint it."""
    data, lines = read_pack_source(path)
    pack = Pack.from_mapping(data, str(path), lines=lines)
    return pack, lint_data(pack.data, lines)


def lint_text(warnings: list[LintWarning]) -> Iterator[str]:
    """The warnings as ``policy lint`` prints them: the warning, then its hint."""
    for warning in warnings:
        yield str(warning)
        yield f"  hint: {warning.hint}"
