"""Speed twins of the engine's record constructors (CONTRIBUTING.md, Speed twins).

Calling a ``NamedTuple`` class runs its generated Python ``__new__`` (keyword handling,
defaults); ``tuple.__new__(cls, fields)`` is the C constructor underneath and builds the same
record at about a quarter of the cost. The engine builds a ``Observation`` per condition and a
``Hit`` per candidate rule on every decision, so it uses these builders, and only these:
positional construction lives here and nowhere else. Each builder takes exactly its record's
fields, in order, and returns what the class's own constructor returns for them
(``tests/decide/test_fast.py``).
"""

from __future__ import annotations

from typing import Any

from refusalkit.decide._compile import CondSpec
from refusalkit.decide._evidence import Hit, Observation, Ruling
from refusalkit.decide._logic import Tri
from refusalkit.model import Action, ReasonCode

__all__ = ["hit", "observation", "ruling"]

_new = tuple.__new__


def observation(
    spec: CondSpec,
    value: Any,
    outcome: Tri,
    element: int | str | None = None,
    outcomes: tuple[Tri, ...] | None = None,
) -> Observation:
    """``Observation(spec, value, outcome, element, outcomes)``, built in C."""
    return _new(Observation, (spec, value, outcome, element, outcomes))


def hit(position: int, state: Tri, observation: Observation | None) -> Hit:
    """``Hit(position, state, observation)``, built in C."""
    return _new(Hit, (position, state, observation))


def ruling(
    action: Action, reason_code: ReasonCode | None, rule: str, message: str | None
) -> Ruling:
    """``Ruling(action, reason_code, rule, message)``, built in C."""
    return _new(Ruling, (action, reason_code, rule, message))
