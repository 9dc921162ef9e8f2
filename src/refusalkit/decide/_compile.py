"""Compiling a validated pack once, so that a decision does no parsing (docs/design/policy.md).

Rules become tuples of compiled conditions; each rule's ``tool`` condition is evaluated once per
distinct tool name (``RuleSet.for_tool``), so a decision only considers the rules that can apply
to its tool, in file order.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import jsonschema

from refusalkit._bounded import BoundedCache
from refusalkit._internal.records import make_step
from refusalkit._internal.source import KeyPath, Lines
from refusalkit.decide._argschema import ArgSchema, re2_validator, schema_patterns
from refusalkit.decide._conditions import (
    FALSE,
    UNKNOWN,
    Condition,
    ConditionSpecError,
    compile_condition,
)
from refusalkit.decide._fields import (
    EACH,
    WALK,
    FieldPathError,
    Step,
    StepKind,
    parse_field_path,
)
from refusalkit.decide._glob import compile_glob
from refusalkit.decide._kinds import COMPONENTS, Kind, kind_parser
from refusalkit.decide._limits import CompiledLimit
from refusalkit.decide._logic import Severity, Tri
from refusalkit.decide._probe import WalkProbe
from refusalkit.decide._regex import search_predicate
from refusalkit.decide._sets import NamedSets, bare_glob_error
from refusalkit.model import DEFAULT_TTL_S, Action, WhyStep, parse_duration

__all__ = [
    "SEVERITY",
    "UNCLASSIFIED",
    "Branch",
    "CompiledFilter",
    "CompiledPack",
    "CompiledRule",
    "CondSpec",
    "FieldGroup",
    "KnownTool",
    "Plan",
    "RuleSet",
    "ToolRule",
    "compile_pack",
    "false_step",
    "make_plan",
]

UNCLASSIFIED = "unclassified"
RESULT_FIELD = "result"  # the field a result filter's condition reads: one text of a result
SEVERITY: Mapping[str, Severity] = {effect.effect: effect for effect in Severity}
_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True, eq=False)
class CondSpec:
    """One compiled ``field path: condition`` pair and how its value may be shown.

    Compared and hashed by identity (``eq=False``): each written condition is one spec.
    """

    path: str
    parts: tuple[str, ...]
    cond: Condition
    field_class: str
    reveal: bool
    rest: tuple[Step, ...] = ()  # steps after the plain keys, up to any ``[*]``
    each: tuple[Step, ...] | None = None  # for a ``[*]`` path: the steps run on each element
    every: bool = False  # ``[*]``: every element must match (allow), else any element does
    walk: bool = False  # ``**``: ``each`` runs on every string anywhere below ``parts``


class KnownTool(NamedTuple):
    """A branch's ``tool`` condition, evaluated once per tool name and known to hold."""

    spec: CondSpec


class Branch(NamedTuple):
    """A branch specialised to one tool: the conditions left to test, and its tool condition
    when that is already known to hold."""

    conds: tuple[CondSpec, ...]
    tool: KnownTool | None


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule as written: its branches (any of), each a tuple of conditions (all of)."""

    index: int
    id: str
    effect: str
    severity: Severity
    message: str | None
    branches: tuple[tuple[CondSpec, ...], ...]  # empty: no `when`, always matches
    ttl: int | None = None  # require-approval: seconds a request may be answered, a grant used


@dataclass(frozen=True, slots=True)
class ToolRule:
    """A rule specialised to one tool name: the branches that tool leaves standing."""

    rule: CompiledRule
    branches: tuple[Branch, ...]
    always: bool  # no `when` at all
    single: CondSpec | None = None  # the only condition left, when there is exactly one
    # every branch is one ``**`` condition under any-of, on one field and kind: decided by one
    # walk of the field (``_walk_hits`` in the engine)
    walks: tuple[CondSpec, ...] | None = None
    walk_any: Callable[[str], bool] | None = None  # holds when some branch may hold on a string
    probe: WalkProbe | None = None  # ``walk_any`` on a raw string, memoised (``_probe.py``)


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """An input filter: one condition on one field; a match refuses ``input-rejected``."""

    id: str
    message: str | None
    spec: CondSpec


class FieldGroup:
    """Rules with one indexable condition on the same field, decided together by lookups.

    Equivalent to checking each rule's condition in turn (``tests/decide/test_plan.py``), but a
    path is split once and looked up, instead of being matched against every rule's glob. The
    ``dir`` hits of a value depend only on its directory part (every ``dir`` key ends with
    ``/``), so they are computed once per directory (a bounded cache).
    """

    __slots__ = ("base", "dirs", "exact", "parse", "parts", "positions", "specs", "subs", "under")

    def __init__(self, parts: tuple[str, ...], parse: Callable[[Any], Any] | None = None) -> None:
        self.parts = parts
        self.parse = parse  # the field's kind, parsed once for the whole group
        self.positions: list[int] = []
        self.specs: dict[int, CondSpec] = {}
        self.exact: dict[str, list[tuple[int, int]]] = {}
        self.base: dict[str, list[tuple[int, int]]] = {}
        self.dirs: dict[str, list[tuple[int, int]]] = {}
        self.subs: dict[str, list[tuple[int, int]]] = {}
        self.under: BoundedCache[str, list[tuple[int, int]]] = BoundedCache(_CACHE_LIMIT)

    def add(self, position: int, spec: CondSpec, index: tuple[tuple[str, str], ...]) -> None:
        """Index a rule's condition; each key lists a rule once, with its first alternative."""
        self.positions.append(position)
        self.specs[position] = spec
        tables = {"exact": self.exact, "base": self.base, "dir": self.dirs, "sub": self.subs}
        for alternative, (kind, key) in enumerate(index):
            listed = tables[kind].setdefault(key, [])
            if all(p != position for p, _ in listed):
                listed.append((position, alternative))

    def match(self, value: str) -> dict[int, int]:
        """Rule position → index of its first alternative that matches ``value``."""
        found: dict[int, int] | None = None
        hits = self.exact.get(value)
        if hits:
            found = dict(hits)
        cut = value.rfind("/") + 1
        if self.base:
            hits = self.base.get(value[cut:])
            if hits:
                found = dict(hits) if found is None else _merge(found, hits)
        if cut and self.dirs:
            head = value[:cut]
            hits = self.under.get(head)
            if hits is None:
                hits = self._under(head)
            if hits:
                found = dict(hits) if found is None else _merge(found, hits)
        if self.subs:
            for literal, hits in self.subs.items():
                if literal in value:
                    found = dict(hits) if found is None else _merge(found, hits)
        return found if found is not None else {}

    def _under(self, head: str) -> list[tuple[int, int]]:
        """The ``dir`` hits of a directory part (ending with ``/``): one lookup per prefix."""
        found: dict[int, int] | None = None
        dirs = self.dirs
        slash = head.find("/")
        while slash != -1:
            hits = dirs.get(head[: slash + 1])
            if hits:
                found = dict(hits) if found is None else _merge(found, hits)
            slash = head.find("/", slash + 1)
        listed = list(found.items()) if found is not None else []
        return self.under.put(head, listed)


def _merge(found: dict[int, int], hits: list[tuple[int, int]]) -> dict[int, int]:
    """``found`` with ``hits`` added, keeping each rule's lowest alternative.

    (Where nothing is found yet, ``dict(hits)`` is the same: each list names a rule once.)
    """
    for position, alternative in hits:
        if position not in found or alternative < found[position]:
            found[position] = alternative
    return found


@dataclass(frozen=True, slots=True)
class Plan:
    """How to decide one tool: its rules in file order, grouped for lookup where possible.

    ``template`` holds, per rule, the step it gets when it does not match (a false rule never
    decides, so that step is fixed); ``false_steps`` has the same per condition, for the rules
    evaluated one by one (``generic``). ``lone`` is the group when it holds every rule (no
    rule is checked one by one), so the engine can decide a string value by the group's
    positions alone (``DecisionPoint._lone_rules``).
    """

    rules: tuple[ToolRule, ...]
    generic: tuple[int, ...]
    groups: tuple[FieldGroup, ...]
    template: tuple[WhyStep | None, ...]
    false_steps: Mapping[CondSpec, WhyStep]
    lone: FieldGroup | None = None


def false_step(rule: CompiledRule, spec: CondSpec) -> WhyStep:
    """The step of ``rule`` when ``spec`` was the condition that did not hold.

    The value is left out: a rule that did not match names its field and test; the value's token
    appears on the steps that matched, were unknown, or decided.
    """
    return make_step(
        rule.id,
        rule.effect,
        matched=False,
        decisive=False,
        field=spec.path,
        field_class=spec.field_class,
        test=spec.cond.test_false,
    )


def _groupable(rule: ToolRule) -> CondSpec | None:
    if rule.always or len(rule.branches) != 1:
        return None
    conds = rule.branches[0].conds
    if len(conds) != 1 or conds[0].cond.index is None or conds[0].each is not None:
        return None
    return conds[0] if _group_parse(conds[0]) is not False else None


def _group_parse(spec: CondSpec) -> Callable[[Any], Any] | bool | None:
    """The kind parser a group applies to the field (None: none); False: not groupable."""
    if not spec.rest:
        return None
    if len(spec.rest) == 1 and spec.rest[0].kind is StepKind.PARSE:
        parse: Callable[[Any], Any] = spec.rest[0].arg
        return parse
    return False


def make_plan(rules: tuple[ToolRule, ...]) -> Plan:
    """Group the rules of one tool by field where their conditions allow lookups."""
    groups: dict[tuple[tuple[str, ...], Any], FieldGroup] = {}
    generic: list[int] = []
    template: list[WhyStep | None] = []
    false_steps: dict[CondSpec, WhyStep] = {}
    for position, rule in enumerate(rules):
        for branch in rule.branches:
            for each in branch.conds:
                false_steps[each] = false_step(rule.rule, each)
        spec = _groupable(rule)
        if spec is None or spec.cond.index is None:
            generic.append(position)
            template.append(None)
            continue
        parse = _group_parse(spec)
        parse = parse if callable(parse) else None
        group = groups.setdefault((spec.parts, parse), FieldGroup(spec.parts, parse))
        group.add(position, spec, spec.cond.index)
        template.append(false_steps[spec])
    found = tuple(groups.values())
    lone = found[0] if len(found) == 1 and not generic else None
    return Plan(rules, tuple(generic), found, tuple(template), false_steps, lone)


_EMPTY_PLAN = Plan((), (), (), (), {})


class RuleSet:
    """The rules in file order, with a bounded per-tool cache of the plans that apply them."""

    __slots__ = ("_cache", "_named", "_open", "_open_blind", "_open_plans", "_probes", "rules")

    def __init__(self, rules: tuple[CompiledRule, ...]) -> None:
        self.rules = rules
        self._cache: dict[str, Plan] = {}
        names = [_tool_names(rule) for rule in rules]
        self._named = frozenset(name for found in names for name in found or ())
        self._open = tuple(rule for rule, found in zip(rules, names, strict=True) if found is None)
        self._open_blind = not any(
            c.path == "tool" for rule in self._open for conds in rule.branches for c in conds
        )
        self._open_plans: dict[tuple[Tri | None, ...], Plan] = {}
        self._probes: dict[tuple[CondSpec, ...], WalkProbe | None] = {}  # shared by all tools

    def for_tool(self, tool: str) -> Plan:
        """The plan for ``tool``: the rules that can apply (tool conditions evaluated once).

        Plans for tools that some rule names exactly are cached. For any other tool (an unknown
        tool, say) only the rules whose tool condition is not a list of names can apply.
        """
        hit = self._cache.get(tool)
        if hit is not None:
            return hit
        if tool not in self._named:
            return self._open_plan(tool)
        rules = tuple(
            t for t in (_specialise(r, tool, self._probes) for r in self.rules) if t is not None
        )
        plan = make_plan(rules) if rules else _EMPTY_PLAN
        self._cache[tool] = plan
        return plan

    def _open_plan(self, tool: str) -> Plan:
        """The plan of a tool no rule names exactly. It depends on the tool only through the
        outcomes of the open rules' tool conditions, so tools with the same outcomes share one
        (an agent that makes up tool names does not build a plan per name)."""
        if not self._open:
            return _EMPTY_PLAN
        if self._open_blind:  # no open rule tests the tool: one plan serves every such tool
            return self._open_plan_for(tool, ())
        signature = tuple(
            _tool_outcome(conds, tool) for rule in self._open for conds in rule.branches or ((),)
        )
        return self._open_plan_for(tool, signature)

    def _open_plan_for(self, tool: str, signature: tuple[Tri | None, ...]) -> Plan:
        plan = self._open_plans.get(signature)
        if plan is None:
            rules = tuple(
                t for t in (_specialise(r, tool, self._probes) for r in self._open) if t is not None
            )
            plan = make_plan(rules) if rules else _EMPTY_PLAN
            if len(self._open_plans) < _CACHE_LIMIT:
                self._open_plans[signature] = plan
        if len(self._cache) < _CACHE_LIMIT:
            self._cache[tool] = plan
        return plan


def _tool_outcome(conds: tuple[CondSpec, ...], tool: str) -> Tri | None:
    """The outcome of a branch's ``tool`` condition on ``tool`` (None: it has none)."""
    spec = next((c for c in conds if c.path == "tool"), None)
    return None if spec is None else spec.cond.check(tool)


def _tool_names(rule: CompiledRule) -> frozenset[str] | None:
    """The tools a rule can apply to, when every branch names them exactly; else None."""
    names: set[str] = set()
    for conds in rule.branches or ((),):
        spec = next((c for c in conds if c.path == "tool"), None)
        index = spec.cond.index if spec is not None else None
        if index is None or any(kind != "exact" for kind, _ in index):
            return None
        names.update(key for _, key in index)
    return frozenset(names)


def _specialise(
    rule: CompiledRule, tool: str, probes: dict[tuple[CondSpec, ...], WalkProbe | None]
) -> ToolRule | None:
    if not rule.branches:
        return ToolRule(rule, (), always=True)
    kept: list[Branch] = []
    for conds in rule.branches:
        tool_spec = next((c for c in conds if c.path == "tool"), None)
        if tool_spec is None:
            kept.append(Branch(conds, None))
            continue
        outcome = tool_spec.cond.check(tool)
        if outcome is FALSE:
            continue
        if outcome is UNKNOWN:
            kept.append(Branch(conds, None))
        else:
            rest = tuple(c for c in conds if c is not tool_spec)
            kept.append(Branch(rest, KnownTool(tool_spec)))
    if not kept:
        return None
    only = kept[0].conds if len(kept) == 1 else ()
    single = only[0] if len(only) == 1 else None
    if single is not None and (single.rest or single.each is not None):
        single = None  # a list or element path goes through the general evaluation
    walks = _walks(kept)
    if walks is None:
        return ToolRule(rule, tuple(kept), always=False, single=single)
    if walks not in probes:  # one search and one memo per rule, whatever the tool
        maybe = _walk_any(walks)
        probes[walks] = None if maybe is None else WalkProbe(walks, walks[0].each or (), maybe)
    probe = probes[walks]
    maybe = None if probe is None else probe.maybe
    return ToolRule(
        rule, tuple(kept), always=False, single=single, walks=walks, walk_any=maybe, probe=probe
    )


def _walk_any(walks: tuple[CondSpec, ...]) -> Callable[[str], bool] | None:
    """One RE2 search for "some branch of a ``**`` rule holds on this string" (None: no)."""
    patterns = [spec.cond.pattern for spec in walks]
    if not patterns or any(p is None for p in patterns):
        return None
    try:
        return search_predicate("|".join(f"(?:{p})" for p in patterns if p is not None))
    except Exception:  # noqa: BLE001 (too big for RE2: each branch is asked on its own)
        return None


def _walks(kept: list[Branch]) -> tuple[CondSpec, ...] | None:
    """The ``**`` conditions of a rule whose every branch is one, any-of, on one field and kind."""
    if any(len(branch.conds) != 1 for branch in kept):
        return None
    specs = tuple(branch.conds[0] for branch in kept)
    first = specs[0]
    if not all(s.walk and not s.every for s in specs):
        return None
    if any(s.parts != first.parts or s.each != first.each for s in specs):
        return None
    return specs


@dataclass(frozen=True, slots=True)
class Attestation:
    """The trusted Ed25519 public keys (raw 32 bytes) by key id."""

    trusted_keys: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class CompiledPack:
    """Everything a decision needs, prepared at load time."""

    default: Action
    reveal: frozenset[str]
    attestation: Attestation | None
    capabilities: Mapping[str, tuple[tuple[str, Callable[[str], bool]], ...]] | None
    tool_schemas: Mapping[str, Any]
    filters: tuple[CompiledFilter, ...]
    rules: RuleSet
    result_filters: tuple[CompiledFilter, ...] = ()
    limits: tuple[CompiledLimit, ...] = ()


def _check_classes(classes: Mapping[str, Any], lines: Lines) -> None:
    """Field-class options that contradict each other are load errors (docs/design/policy.md)."""
    for name, spec in classes.items():
        options = [o for o in ("case_fold", "windows", "resolve") if o in spec]
        if spec.get("kind") != "path" and options:
            option = options[0]
            raise lines.error(
                f"{option} is an option of kind: path",
                ("field_classes", name, option),
                hint="Add kind: path to the class, or remove the option.",
            )
    for name in sorted(k for k, v in classes.items() if v.get("reveal", False)):
        if classes[name].get("sensitive", False):
            raise lines.error(
                f"field class {name!r} is both sensitive and reveal: true",
                ("field_classes", name),
                hint="A sensitive class must stay redacted: drop `reveal: true` (or the "
                "`sensitive` label, if its values may be shown).",
            )


class _Compiler:
    def __init__(self, data: Mapping[str, Any], lines: Lines) -> None:
        self.data = data
        self.lines = lines
        classes = data.get("field_classes", {})
        self.classes = {UNCLASSIFIED, *classes}
        self.reveal = frozenset(k for k, v in classes.items() if v.get("reveal", False))
        self.kinds = {k: v for k, v in classes.items() if "kind" in v}
        _check_classes(classes, lines)
        self.sets = NamedSets(data.get("sets", {}), lines)
        self.bare: dict[tuple[str, bool, str | None], Condition] = {}

    def spec(self, field: str, raw: Any, where: KeyPath, *, every: bool = False) -> CondSpec:
        try:
            parsed = parse_field_path(field)
        except FieldPathError as exc:
            raise self.lines.error(str(exc), where) from exc
        if field == "tool":
            bare_glob_error(raw, where, self.lines)
        raw, labels = self.sets.expand(raw, where)
        named = raw.get("class", UNCLASSIFIED) if isinstance(raw, Mapping) else UNCLASSIFIED
        shown = field == "tool" or (isinstance(named, str) and named in self.reveal)
        declared = self.kinds.get(named) if isinstance(named, str) else None
        kind = declared.get("kind") if declared is not None else None
        # a literal of a hidden class is withheld from the test text too (docs/design/decision.md)
        try:
            cond = self.condition(raw, not shown, kind)
        except ConditionSpecError as exc:
            raise self.lines.error(str(exc), (*where, exc.key) if exc.key else where) from exc
        if labels is not None:
            cond = replace(cond, test_false=labels)
        field_class = cond.field_class or UNCLASSIFIED
        if field_class not in self.classes:
            raise self.lines.error(
                f"field class {field_class!r} is not declared in field_classes",
                (*where, "class"),
                hint="Declare it under field_classes (with reveal: true to show its values).",
            )
        reveal = field == "tool" or field_class in self.reveal
        walk = WALK in parsed.rest
        if declared is None:  # the parsed path's own plain keys and steps
            rest, each = _split_each(parsed.rest)
            return CondSpec(field, parsed.parts, cond, field_class, reveal, rest, each, every, walk)
        steps = (*(Step(StepKind.KEY, p) for p in parsed.parts), *parsed.rest)
        self.check_case(declared, raw, where)
        steps = _with_parse(steps, declared, lenient=walk)
        if declared.get("resolve") and not walk:
            steps = self.both_forms(steps)
        plain = next((i for i, s in enumerate(steps) if s.kind is not StepKind.KEY), len(steps))
        rest, each = _split_each(steps[plain:])
        parts = tuple(s.arg for s in steps[:plain])
        return CondSpec(field, parts, cond, field_class, reveal, rest, each, every, walk)

    def condition(self, raw: Any, hide: bool, kind: str | None) -> Condition:
        """``compile_condition``, once per bare string: ``tool: fs.write`` in a hundred rules
        is one ``Condition`` (it holds no state; ``CondSpec`` is the per-rule record)."""
        if type(raw) is not str:
            return compile_condition(raw, hide_values=hide, kind=kind)
        key = (raw, hide, kind)  # every input of the compile, so no two fields ever share wrongly
        cond = self.bare.get(key)
        if cond is None:
            cond = self.bare[key] = compile_condition(raw, hide_values=hide, kind=kind)
        return cond

    def both_forms(self, steps: tuple[Step, ...]) -> tuple[Step, ...]:
        """``resolve: true``: the two forms of the path are checked as the elements of a list
        (any form under deny, both under allow); under a ``[*]`` path each element's forms
        join the elements (``_forms`` in the engine)."""
        return steps if EACH in steps else (*steps, EACH)

    def check_case(self, declared: Mapping[str, Any], raw: Any, where: KeyPath) -> None:
        """A ``case_fold`` class sees lower-case values: upper-case literals could never match."""
        if not declared.get("case_fold") or not isinstance(raw, Mapping):
            return
        for op in ("glob", "prefix", "under", "above", "in"):
            items = raw.get(op)
            for item in items if isinstance(items, list) else [items]:
                if isinstance(item, str) and item != item.lower():
                    raise self.lines.error(
                        f"{item!r} has upper-case letters, but its class folds case",
                        (*where, op),
                        hint="Write the literal in lower case: values of a case_fold class are.",
                    )

    def rule(self, index: int, raw: Mapping[str, Any]) -> CompiledRule:
        when = raw.get("when")
        effect = raw["effect"]
        where: KeyPath = ("rules", index, "when")
        if when is None:
            branches: tuple[tuple[CondSpec, ...], ...] = ()
        elif isinstance(when, list):
            branches = tuple(self.branch(m, (*where, j), effect) for j, m in enumerate(when))
        else:
            branches = (self.branch(when, where, effect),)
        severity = Severity.of(effect)
        ttl = None
        if severity is Severity.REQUIRE_APPROVAL:  # the schema checked the form of ``ttl``
            ttl = parse_duration(raw["ttl"]) if "ttl" in raw else DEFAULT_TTL_S
        return CompiledRule(index, raw["id"], effect, severity, raw.get("message"), branches, ttl)

    def branch(self, conds: Mapping[str, Any], where: KeyPath, effect: str) -> tuple[CondSpec, ...]:
        every = effect == "allow"  # an allow holds for a list only when every element does
        return tuple(self.spec(f, c, (*where, f), every=every) for f, c in conds.items())

    def filter(self, index: int, raw: Mapping[str, Any]) -> CompiledFilter:
        cond = {k: v for k, v in raw.items() if k not in ("id", "field", "message", "description")}
        spec = self.spec(raw["field"], cond, ("input_filters", index))
        return CompiledFilter(raw["id"], raw.get("message"), spec)

    def result_filter(self, index: int, raw: Mapping[str, Any]) -> CompiledFilter:
        """A result filter: a filter without ``field``, run over every text of a tool's result
        (field ``result``; docs/design/mcp.md, Result filters)."""
        cond = {k: v for k, v in raw.items() if k not in ("id", "message", "description")}
        spec = self.spec(RESULT_FIELD, cond, ("result_filters", index))
        return CompiledFilter(raw["id"], raw.get("message"), spec)

    def limit(self, index: int, raw: Mapping[str, Any]) -> CompiledLimit:
        """A budget (docs/design/policy.md, Limits): its ``tools`` condition is compiled as a
        rule's ``tool`` condition is."""
        tools = raw.get("tools")
        spec = None if tools is None else self.spec("tool", tools, ("limits", index, "tools"))
        window = raw.get("window_s")
        return CompiledLimit(
            raw["id"], spec, int(raw["max_calls"]), None if window is None else float(window),
            raw.get("message"),
        )  # fmt: skip

    def attestation(self) -> Attestation | None:
        raw = self.data.get("attestation")
        if raw is None:
            return None
        keys: dict[str, bytes] = {}
        for kid, text in raw["trusted_keys"].items():
            try:
                key = base64.b64decode(text, validate=True)
            except ValueError as exc:
                raise self.lines.error("not base64", ("attestation", "trusted_keys", kid)) from exc
            if len(key) != 32:
                msg = f"an Ed25519 public key is 32 bytes, not {len(key)}"
                raise self.lines.error(msg, ("attestation", "trusted_keys", kid))
            keys[kid] = key
        return Attestation(keys)

    def capabilities(self) -> dict[str, tuple[tuple[str, Callable[[str], bool]], ...]] | None:
        raw = self.data.get("capabilities")
        if raw is None:
            return None
        return {agent: tuple((g, compile_glob(g)) for g in globs) for agent, globs in raw.items()}

    def tool_schemas(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for tool, spec in self.data.get("tools", {}).items():
            schema = spec["args"]
            cls = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                where = ("tools", tool, "args", *exc.absolute_path)
                raise self.lines.error(f"not a valid JSON Schema: {exc.message}", where) from exc
            self.check_patterns(tool, schema)
            out[tool] = ArgSchema(re2_validator(cls)(schema))
        return out

    def check_patterns(self, tool: str, schema: Any) -> None:
        """Every schema regex must be one RE2 reads; ``unevaluatedProperties`` would run the
        ``patternProperties`` regexes on ``re``, so the two are not combined."""
        where: KeyPath = ("tools", tool, "args")
        found = list(schema_patterns(schema))
        for path, pattern in found:
            try:
                search_predicate(pattern)
            except Exception as exc:  # re2 raises its own error type
                msg = f"the schema regex {pattern!r} is not one RE2 can run"
                raise self.lines.error(
                    msg,
                    (*where, *path[:-1]),
                    hint="Schema patterns run on RE2: no backreferences, no lookaround.",
                ) from exc
        if found and '"unevaluatedProperties"' in json.dumps(schema):
            raise self.lines.error(
                "unevaluatedProperties cannot be combined with patterns in a tool schema",
                where,
                hint="Use additionalProperties instead.",
            )

    def compile(self) -> CompiledPack:
        rules = tuple(self.rule(i, r) for i, r in enumerate(self.data["rules"]))
        filters = tuple(self.filter(i, f) for i, f in enumerate(self.data.get("input_filters", [])))
        return CompiledPack(
            default=Action(self.data.get("default", "deny")),
            reveal=self.reveal,
            attestation=self.attestation(),
            capabilities=self.capabilities(),
            tool_schemas=self.tool_schemas(),
            filters=filters,
            rules=RuleSet(rules),
            result_filters=tuple(
                self.result_filter(i, f) for i, f in enumerate(self.data.get("result_filters", []))
            ),
            limits=tuple(self.limit(i, x) for i, x in enumerate(self.data.get("limits", []))),
        )


def _with_parse(
    steps: tuple[Step, ...], declared: Mapping[str, Any], *, lenient: bool = False
) -> tuple[Step, ...]:
    """Insert the kind's parse step: before the component the path names (``args.url.host``),
    or at the end, where the parsed value is the kind's normal text. ``lenient``: the path
    kind reads paths that climb above their start as the system does (``args.**``)."""
    kind = Kind(declared["kind"])
    names = COMPONENTS[kind]
    keys = [i for i, step in enumerate(steps) if step.kind is StepKind.KEY]
    at = keys[-1] if len(keys) > 1 and steps[keys[-1]].arg in names else None
    parse = kind_parser(
        kind,
        record=at is not None,
        case_fold=bool(declared.get("case_fold")),
        windows=bool(declared.get("windows")),
        lenient=lenient and kind is Kind.PATH,
        resolve=bool(declared.get("resolve")),
    )
    step = Step(StepKind.PARSE, parse)
    if at is None:
        return (*steps, step)
    return (*steps[:at], step, *steps[at:])


def _split_each(steps: tuple[Step, ...]) -> tuple[tuple[Step, ...], tuple[Step, ...] | None]:
    """The steps before a ``[*]`` (or ``**``) and those run on each element (None: neither)."""
    fan = EACH if EACH in steps else WALK if WALK in steps else None
    if fan is None:
        return steps, None
    at = steps.index(fan)
    return steps[:at], steps[at + 1 :]


def compile_pack(data: Mapping[str, Any], lines: Lines) -> CompiledPack:
    """Compile a schema-valid pack; raises ``PolicyError`` at the file, line and key at fault."""
    return _Compiler(data, lines).compile()
