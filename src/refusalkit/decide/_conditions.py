"""Conditions compiled once into small three-valued predicates (docs/design/policy.md, Conditions).

``Condition.check(value)`` returns a ``Tri`` (``_logic``): ``TRUE`` when it holds, ``FALSE`` when
it does not, ``UNKNOWN`` when the value has the wrong type for the test. A missing field is
unknown too; the caller decides that before calling ``check``. Which alternative held (the glob
or regex a trail names) is a separate question, ``Condition.which(value)``, asked only when a
step is built: the hot path asks for the outcome alone.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from refusalkit.decide._glob import compile_glob, glob_to_regex
from refusalkit.decide._logic import Tri
from refusalkit.decide._regex import regex_literal, required_literals, search_predicate

__all__ = [
    "FALSE",
    "OPERATORS",
    "TRUE",
    "UNKNOWN",
    "Condition",
    "ConditionSpecError",
    "compile_condition",
    "index_keys",
    "json_type",
]

FALSE = Tri.FALSE
UNKNOWN = Tri.UNKNOWN
TRUE = Tri.TRUE
OPERATORS = ("glob", "regex", "prefix", "under", "above", "in", "range", "cidr", "not")
_COMBINE_FROM = 4  # a string test with more alternatives first asks one combined RE2 regex

Check = Callable[[Any], Tri]
Which = Callable[[Any], int | None]  # the index of the first alternative that holds, or None
# Per alternative: ("exact", s) value == s; ("base", n) last path segment == n;
# ("dir", p) value starts with p, which ends with "/"; ("sub", t) value contains t (a regex that
# is a plain literal). A condition whose every alternative has
# such a key can be evaluated together with others on the same field by dictionary lookups.
Index = tuple[tuple[str, str], ...]


class ConditionSpecError(ValueError):
    """A condition that cannot be compiled; ``key`` names the offending operator."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled condition: the predicate and the trail texts of its outcomes."""

    check: Check
    which: Which  # the first alternative that holds (None: ``check`` is not ``TRUE``)
    tests: tuple[str, ...]  # trail text when alternative i matched
    test_false: str  # trail text when nothing matched (or unknown)
    field_class: str | None  # the ``class:`` given on the condition, if any
    index: Index | None = None  # how to find this condition by value (see ``index_keys``)
    # an RE2 regex that a string matches (search) exactly when the condition holds on it, for
    # conditions that have one (glob, regex, under): several can then be asked at once
    pattern: str | None = None
    # texts without ``/`` of which every string the condition holds on contains one, up to
    # RE2's case folding (``needles``): a cheap screen before the condition is asked
    needles: frozenset[str] | None = None

    def describe(self, outcome: Tri, value: Any) -> str:
        """The trail's ``test`` text for ``check(value)``'s outcome: the alternative that held,
        or the whole condition. With one alternative there is nothing to ask."""
        if outcome is TRUE:
            tests = self.tests
            if len(tests) == 1:
                return tests[0]
            index = self.which(value)
            if index is not None:
                return tests[index]
        return self.test_false


def json_type(value: Any) -> str:
    """The JSON type name of a Python value decoded from JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list | tuple) else "object"


def _as_list(spec: Any, op: str) -> list[str]:
    items = spec if isinstance(spec, list) else [spec]
    if not items or not all(isinstance(item, str) for item in items):
        raise ConditionSpecError(f"`{op}` takes a string or a non-empty list of strings", op)
    return items


def _glob_key(glob: str) -> tuple[str, str] | None:
    if not set(glob) & {"*", "?"}:
        return ("exact", glob)
    head, tail = glob[:-3], glob[3:]
    if glob.endswith("/**") and not set(head) & {"*", "?"}:
        return ("dir", head + "/")
    if glob.startswith("**/") and not set(tail) & {"*", "?", "/"}:
        return ("base", tail)
    return None


def index_keys(op: str, items: Sequence[Any]) -> Index | None:
    """The lookup keys of a condition's alternatives, or None when one has none."""
    keys: list[tuple[str, str] | None]
    if op == "glob":
        keys = [_glob_key(item) for item in items]
    elif op == "prefix":
        keys = [("dir", item) if item.endswith("/") else None for item in items]
    elif op in ("in", "=="):
        keys = [("exact", item) if isinstance(item, str) else None for item in items]
    elif op == "regex":
        literals = [regex_literal(item) for item in items]
        keys = [("sub", lit) if lit is not None else None for lit in literals]
    else:
        return None
    if not keys or any(key is None for key in keys):
        return None
    return tuple(key for key in keys if key is not None)


def _label(op: str, items: Sequence[str]) -> str:
    return f"{op} {items[0]}" if len(items) == 1 else f"{op} [{', '.join(items)}]"


Built = tuple[Check, Which, tuple[str, ...], str]  # what an operator compiles to


def _first_if_true(check: Check) -> Which:
    """``which`` of a condition with one alternative: 0 when it holds."""

    def which(value: Any) -> int | None:
        return 0 if check(value) is TRUE else None

    return which


def _string_any(
    preds: Sequence[Callable[[str], bool]], search: Callable[[str], Sequence[int]] | None = None
) -> tuple[Check, Which]:
    """Any-of over string predicates; non-strings are unknown.

    ``search``, when given, returns the indices of every alternative that holds, from one
    combined RE2 search instead of one per alternative (``_set_search``).
    """
    if len(preds) == 1:
        only = preds[0]

        def check_one(value: Any) -> Tri:
            if not isinstance(value, str):
                return UNKNOWN
            return TRUE if only(value) else FALSE

        return check_one, _first_if_true(check_one)
    if search is not None:
        return _searched(search)
    ordered = tuple(preds)

    def check_many(value: Any) -> Tri:
        if not isinstance(value, str):
            return UNKNOWN
        for pred in ordered:
            if pred(value):
                return TRUE
        return FALSE

    def which_many(value: Any) -> int | None:
        if not isinstance(value, str):
            return None
        return next((index for index, pred in enumerate(ordered) if pred(value)), None)

    return check_many, which_many


def _searched(search: Callable[[str], Sequence[int]]) -> tuple[Check, Which]:
    """``check`` and ``which`` from a search that names every alternative that holds."""

    def check_found(value: Any) -> Tri:
        if not isinstance(value, str):
            return UNKNOWN
        return TRUE if search(value) else FALSE

    def which_found(value: Any) -> int | None:
        found = search(value) if isinstance(value, str) else None
        return min(found) if found else None

    return check_found, which_found


def _regex_pred(pattern: str) -> Callable[[str], bool]:
    try:
        return search_predicate(pattern)
    except Exception as exc:  # re2 raises its own error type; the message is RE2's
        text = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ConditionSpecError(f"not an RE2 regex {pattern!r}: {text}", "regex") from exc


def _prefix_pred(prefix: str) -> Callable[[str], bool]:
    return lambda value: value.startswith(prefix)


def _above_pred(directory: str) -> Callable[[str], bool]:
    """An absolute directory glob and every directory above it: the value is the directory
    or one of its ancestors (moving ``/home/dev`` moves ``/home/dev/.aws``). Segments are
    matched as ``glob`` matches them; a relative value is above no absolute directory."""
    if not directory.startswith("/") or directory.endswith("/") or "**" in directory:
        raise ConditionSpecError(
            f"`above` names an absolute directory glob without `**` or a trailing '/' "
            f"(not {directory!r})",
            "above",
        )
    segments = tuple(compile_glob(part) for part in directory[1:].split("/"))

    def above(value: str) -> bool:
        if not value.startswith("/"):
            return False
        parts = value[1:].split("/") if value != "/" else []
        if len(parts) > len(segments):
            return False
        return all(match(part) for match, part in zip(segments, parts, strict=False))

    return above


def _under_pred(directory: str) -> Callable[[str], bool]:
    """A directory glob as a whole: the directory itself and everything under it."""
    if not directory or directory.endswith("/"):
        raise ConditionSpecError(
            f"`under` names a directory without a trailing '/' (not {directory!r})", "under"
        )
    itself, inside = compile_glob(directory), compile_glob(directory + "/**")
    return lambda value: itself(value) or inside(value)


def _as_regex(op: str, item: str) -> str | None:
    """The RE2 regex (search semantics) equivalent to one alternative, where there is one."""
    if op == "regex":
        return item
    if op == "glob":
        return glob_to_regex(item)
    if op == "under":
        return f"(?:{glob_to_regex(item)})|(?:{glob_to_regex(item + '/**')})"
    return None


def _set_search(op: str, items: Sequence[str]) -> Callable[[str], Sequence[int]] | None:
    """Every alternative that holds, from one RE2 set search (``RE2::Set``: every alternative
    that matches, in one pass), instead of one search per alternative; None when there are few
    alternatives, or one has no regex.

    Equivalent to testing each alternative in order (``tests/decide/test_sets.py``).
    """
    if len(items) < _COMBINE_FROM:
        return None
    parts = [_as_regex(op, item) for item in items]
    if any(part is None for part in parts):
        return None
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    try:
        regexes = re2.Set.SearchSet(options)
        for part in parts:
            regexes.Add(part)
        regexes.Compile()
    except Exception:  # noqa: BLE001 (too big for RE2's memory budget: test one by one)
        return None
    match: Callable[[str], Sequence[int]] = regexes.Match
    return match


def _string_op(op: str, spec: Any) -> Built:
    items = _as_list(spec, op)
    factory = {
        "glob": compile_glob,
        "regex": _regex_pred,
        "prefix": _prefix_pred,
        "under": _under_pred,
        "above": _above_pred,
    }[op]
    preds = [factory(item) for item in items]
    check, which = _string_any(preds, _set_search(op, items))
    return check, which, tuple(f"{op} {item}" for item in items), _label(op, items)


def _ipv4(value: str) -> int | None:
    """A dotted-quad IPv4 address as ``ipaddress`` reads it (no leading zeros), else None."""
    parts = value.split(".")
    if len(parts) != 4:
        return None
    number = 0
    for part in parts:
        if not (part.isascii() and part.isdigit() and len(part) <= 3):
            return None
        if part[0] == "0" and len(part) > 1:
            return None
        octet = int(part)
        if octet > 255:
            return None
        number = number << 8 | octet
    return number


_NAT64 = int(ipaddress.IPv6Address("64:ff9b::"))  # RFC 6052 §2.1 well-known prefix, /96
_LOW32 = 0xFFFF_FFFF

IPForms = tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=4096)
def _ip(value: str) -> IPForms | None:
    """The ``(version, integer)`` forms of an IP address string, or None when it is not one.

    An IPv6 address that carries an IPv4 host is also that IPv4 address, so that IPv4 networks
    catch it: IPv4-mapped ``::ffff:a.b.c.d`` (RFC 4291 §2.5.5.2) and the NAT64 well-known
    prefix ``64:ff9b::a.b.c.d`` (RFC 6052 §2.1). 6to4 (``2002::/16``) and the deprecated
    IPv4-compatible form are not translated: they do not name the IPv4 host itself.
    """
    number = _ipv4(value)
    if number is not None:
        return ((4, number),)
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        return None
    if addr.version == 4:
        return ((4, int(addr)),)
    mapped = addr.ipv4_mapped if isinstance(addr, ipaddress.IPv6Address) else None
    if mapped is not None:
        return (6, int(addr)), (4, int(mapped))
    if int(addr) & ~_LOW32 == _NAT64:
        return (6, int(addr)), (4, int(addr) & _LOW32)
    return ((6, int(addr)),)


def _cidr_op(spec: Any, names_false: bool) -> Built:
    items = _as_list(spec, "cidr")
    try:
        nets = tuple(ipaddress.ip_network(item, strict=False) for item in items)
    except ValueError as exc:
        raise ConditionSpecError(f"not a CIDR network: {exc}", "cidr") from exc
    masks = tuple(
        (index, net.version, int(net.network_address), int(net.netmask))
        for index, net in enumerate(nets)
    )

    def network_of(forms: IPForms) -> int | None:
        """The first network that holds one of an address's forms."""
        for index, net_version, network, mask in masks:
            for version, number in forms:
                if version == net_version and number & mask == network:
                    return index
        return None

    def check(value: Any) -> Tri:
        if not isinstance(value, str):
            return UNKNOWN
        forms = _ip(value)
        if forms is None:  # a host name the url kind has already checked is in no network
            return FALSE if names_false else UNKNOWN
        for _, net_version, network, mask in masks:  # network_of, inline: the hot path
            for version, number in forms:
                if version == net_version and number & mask == network:
                    return TRUE
        return FALSE

    def which(value: Any) -> int | None:
        forms = _ip(value) if isinstance(value, str) else None
        return None if forms is None else network_of(forms)

    return check, which, tuple(f"cidr {item}" for item in items), _label("cidr", items)


def _withheld(count: int) -> str:
    """The stand-in for ``count`` policy literals of a class that is not ``reveal: true``."""
    return "(withheld value)" if count == 1 else f"({count} withheld values)"


def _in_op(spec: Any, hide: bool) -> Built:
    if not isinstance(spec, list) or not spec:
        raise ConditionSpecError("`in` takes a non-empty list of values", "in")
    table: dict[tuple[str, Any], int] = {}
    for index, item in enumerate(spec):
        if isinstance(item, dict | list):
            raise ConditionSpecError("`in` lists scalars (strings, numbers, booleans, null)", "in")
        table.setdefault((json_type(item), item), index)
    types = frozenset(kind for kind, _ in table)

    def check(value: Any) -> Tri:
        kind = json_type(value)
        if kind not in types:
            return UNKNOWN
        return TRUE if (kind, value) in table else FALSE

    def which(value: Any) -> int | None:
        kind = json_type(value)
        return table.get((kind, value)) if kind in types else None

    shown = _withheld(len(spec)) if hide else f"[{', '.join(map(_show, spec))}]"
    tests = tuple(f"in {shown}" for _ in spec)
    return check, which, tests, tests[0]


def _range_op(spec: Any) -> Built:
    if not isinstance(spec, Mapping) or not spec or set(spec) - {"min", "max"}:
        raise ConditionSpecError("`range` takes {min, max} (either may be left out)", "range")
    low, high = spec.get("min"), spec.get("max")
    for bound in (low, high):
        if bound is not None and json_type(bound) != "number":
            raise ConditionSpecError("`range` bounds must be numbers", "range")

    def check(value: Any) -> Tri:
        if json_type(value) != "number":
            return UNKNOWN
        if (low is not None and value < low) or (high is not None and value > high):
            return FALSE
        return TRUE

    text = f"range [{_show(low) if low is not None else '-inf'}, "
    text += f"{_show(high) if high is not None else '+inf'}]"
    return check, _first_if_true(check), (text,), text


def _equal_op(target: Any, hide: bool) -> Built:
    kind = json_type(target)
    if kind in ("array", "object"):
        raise ConditionSpecError("a bare condition must be a scalar; use `in` for a list")
    if kind == "string":

        def check_str(value: Any) -> Tri:
            if not isinstance(value, str):
                return UNKNOWN
            return TRUE if value == target else FALSE

        check: Check = check_str
    else:

        def check(value: Any) -> Tri:
            if json_type(value) != kind:
                return UNKNOWN
            return TRUE if value == target else FALSE

    text = f"== {_withheld(1) if hide else _show(target)}"
    return check, _first_if_true(check), (text,), text


def _not_op(spec: Any, hide: bool, kind: str | None) -> Built:
    inner = compile_condition(spec, hide_values=hide, kind=kind)
    inner_check = inner.check

    def check(value: Any) -> Tri:
        outcome = inner_check(value)
        if outcome is UNKNOWN:
            return UNKNOWN
        return FALSE if outcome is TRUE else TRUE

    text = f"not ({inner.test_false})"
    return check, _first_if_true(check), (text,), text


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def compile_condition(
    spec: Any, *, hide_values: bool = False, kind: str | None = None
) -> Condition:
    """Compile one condition: a bare scalar (equality) or a map with one operator and ``class``.

    ``hide_values``: the field's class is not ``reveal: true``, so the trail texts of ``==`` and
    ``in`` count their literals instead of quoting them (a quoted literal that matched would
    be the request's value in clear, docs/design/decision.md Redaction). Patterns (``glob``,
    ``regex``, ``prefix``, ``cidr``) and ``range`` bounds are shown: they describe values, they are
    not one.

    ``kind``: the field class's kind. Under ``url`` the value reaching ``cidr`` is a host the
    parser accepted, so a host name is in no network (false), not unknown (docs/policy.md).
    """
    if not isinstance(spec, Mapping):
        check, which, tests, false_text = _equal_op(spec, hide_values)
        return Condition(check, which, tests, false_text, None, index_keys("==", [spec]))
    field_class = spec.get("class")
    if field_class is not None and not isinstance(field_class, str):
        raise ConditionSpecError("`class` must be the name of a field class", "class")
    ops = [key for key in spec if key != "class"]
    unknown = [key for key in ops if key not in OPERATORS]
    if unknown:
        raise ConditionSpecError(f"unknown operator `{unknown[0]}`", unknown[0])
    if len(ops) != 1:
        raise ConditionSpecError(
            f"a condition has exactly one operator of {', '.join(OPERATORS)} (found {len(ops)})"
        )
    return _operator(ops[0], spec[ops[0]], field_class, hide_values, kind)


def _operator(
    op: str, arg: Any, field_class: str | None, hide: bool, kind: str | None
) -> Condition:
    built: Built
    if op in ("glob", "regex", "prefix", "under", "above"):
        built = _string_op(op, arg)
    elif op == "cidr":
        built = _cidr_op(arg, names_false=kind == "url")
    elif op == "in":
        built = _in_op(arg, hide)
    elif op == "range":
        built = _range_op(arg)
    else:
        built = _not_op(arg, hide, kind)
    check, which, tests, false_text = built
    items = arg if isinstance(arg, list) else [arg]
    pattern = _pattern(op, items) if op in ("glob", "regex", "under") else None
    index = index_keys(op, items)
    return Condition(
        check, which, tests, false_text, field_class, index, pattern, needles(op, items)
    )


def needles(op: str, items: Sequence[Any]) -> frozenset[str] | None:
    """Texts without ``/`` of which every string that some alternative matches contains one,
    up to case folding (None: not known). A path's normal form keeps its segments as written
    (docs/policy.md, Kinds), so a needle of a parsed path is in the string it was parsed from.
    """
    found: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            return None
        literals = required_literals(item, folded=True) if op == "regex" else _glob_runs(op, item)
        pieces = [_longest_piece(text) for text in literals or ()]
        if not pieces or not all(pieces):
            return None
        found.update(pieces)
    return frozenset(found)


def _glob_runs(op: str, glob: str) -> frozenset[str] | None:
    """A glob's (or ``under`` directory's) literal runs: a match holds every one of them."""
    if op not in ("glob", "under"):
        return None
    runs = [run for run in glob.replace("?", "*").split("*") if run]
    best = max(runs, key=lambda run: len(_longest_piece(run)), default=None)
    return None if best is None else frozenset([best])


def _longest_piece(text: str) -> str:
    """The longest part of ``text`` between slashes ('' when it is all slashes)."""
    return max(text.split("/"), key=len)


def _pattern(op: str, items: Sequence[Any]) -> str | None:
    """The alternation of a string condition's alternatives, as one RE2 search regex."""
    parts = [_as_regex(op, item) for item in items if isinstance(item, str)]
    if len(parts) != len(items) or any(part is None for part in parts):
        return None
    return "|".join(f"(?:{part})" for part in parts)
