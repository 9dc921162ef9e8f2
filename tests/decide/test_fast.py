"""The engine's record builders (``decide/_fast.py``) are its records' own constructors, faster.

A speed twin (CONTRIBUTING.md, Speed twins): ``observation``, ``hit`` and ``ruling`` build with
``tuple.__new__``, which skips the ``NamedTuple``'s generated ``__new__`` and so any check it
would make. Each is pinned here to the class it builds: the same type, the same fields, equal
records, for any fields. This file imports internals to pin that twin, and checks that positional
construction lives in ``_fast.py`` alone.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from refusalkit.decide import Pack
from refusalkit.decide._compile import CondSpec
from refusalkit.decide._evidence import Hit, Observation, Ruling
from refusalkit.decide._fast import hit, observation, ruling
from refusalkit.decide._logic import Tri
from refusalkit.model import Action, ReasonCode

SRC = Path(__file__).resolve().parents[2] / "src" / "refusalkit"


def _specs() -> list[CondSpec]:
    """Real compiled conditions: a plain field, a ``[*]`` path and a ``**`` path."""
    when = [
        {"args.path": {"glob": ["/etc/**", "**/.env"]}},
        {"args.argv[*]": {"prefix": "-"}},
        {"args.**": {"regex": "secret"}},
    ]
    rules = [{"id": f"r{i}", "effect": "deny", "when": w} for i, w in enumerate(when)]
    data = {"policy": "t", "version": "1", "default": "allow", "rules": rules}
    compiled = Pack.from_mapping(data).compiled
    return [c for rule in compiled.rules.rules for branch in rule.branches for c in branch]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_tri = st.sampled_from(list(Tri))
_elements = st.none() | st.integers(0, 99) | st.text()
_outcomes = st.none() | st.tuples(_tri) | st.lists(_tri, max_size=5).map(tuple)


def _same(built: Any, reference: Any) -> None:
    assert type(built) is type(reference)
    assert built == reference
    assert built._asdict() == reference._asdict()
    assert all(a is b for a, b in zip(built, reference, strict=True))


@given(st.sampled_from(_specs()), _json, _tri, _elements, _outcomes)
def test_witness_is_the_constructor(
    spec: CondSpec, value: Any, outcome: Tri, element: int | str | None, outcomes: Any
) -> None:
    _same(
        observation(spec, value, outcome, element, outcomes),
        Observation(spec, value, outcome, element, outcomes),
    )
    _same(observation(spec, value, outcome), Observation(spec, value, outcome))


@given(st.integers(0, 10_000), _tri, st.sampled_from(_specs()), _json, _tri)
def test_hit_is_the_constructor(
    position: int, state: Tri, spec: CondSpec, value: Any, outcome: Tri
) -> None:
    why = Observation(spec, value, outcome)
    _same(hit(position, state, why), Hit(position, state, why))
    _same(hit(position, state, None), Hit(position, state, None))


@given(
    st.sampled_from(list(Action)),
    st.none() | st.sampled_from(list(ReasonCode)),
    st.text(),
    st.none() | st.text(),
)
def test_verdict_is_the_constructor(
    action: Action, code: ReasonCode | None, rule: str, message: str | None
) -> None:
    _same(ruling(action, code, rule, message), Ruling(action, code, rule, message))


def test_the_builders_take_exactly_the_fields() -> None:
    """A builder's parameters are its record's fields, in order: a field added to a record
    and not to its builder fails here, not as a shifted field in a trail."""
    for builder, record in ((observation, Observation), (hit, Hit), (ruling, Ruling)):
        names = builder.__code__.co_varnames[: builder.__code__.co_argcount]
        assert names == record._fields, builder.__name__


def test_positional_construction_lives_in_fast_alone() -> None:
    """``tuple.__new__`` appears in ``decide/_fast.py`` and in no other source file."""
    found = sorted(
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if "tuple.__new__" in path.read_text(encoding="utf-8")
    )
    assert found == ["decide/_fast.py"]


_OUTCOME_NAMES = {"TRUE", "FALSE", "UNKNOWN"}


def _tri_comparisons(tree: ast.AST) -> list[int]:
    """Lines where an outcome is compared other than by identity (``==``, ``>=``, ``!=``...)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        names = {o.id if isinstance(o, ast.Name) else getattr(o, "attr", None) for o in operands}
        if names & _OUTCOME_NAMES and any(
            not isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops
        ):
            lines.append(node.lineno)
    return lines


def test_outcomes_are_compared_by_identity_only() -> None:
    """Every ``Tri`` comparison in the engine is ``is`` / ``is not`` (docs/policy.md, Rules)."""
    offending = {
        path.name: lines
        for path in (SRC / "decide").glob("*.py")
        if (lines := _tri_comparisons(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offending == {}
