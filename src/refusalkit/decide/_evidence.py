"""The engine's working records: why a condition came out as it did, a rule that may decide,
and what the rules decided (docs/design/policy.md, Rules; docs/design/decision.md, why-trail).

None of them leaves the engine: a ``Observation`` becomes a ``WhyStep``, a ``Ruling`` the action,
reason code, rule and message of a ``Decision``. The hot path builds them with the speed twins
in ``_fast``; these classes' own constructors are the reference.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from refusalkit.decide._compile import CondSpec
from refusalkit.decide._logic import Tri
from refusalkit.model import Action, ReasonCode

__all__ = ["Hit", "Observation", "Ruling"]


class Observation(NamedTuple):
    """Why a condition came out as it did: the condition, the value it saw, and the outcome.

    For a ``[*]`` path, ``value`` is the element that decided, ``element`` its index and
    ``outcomes`` every element's outcome (shown element by element in the trail); for a ``**``
    path, ``element`` is the field path of the string that decided (``args.files[2].name``).
    Which alternative held is not kept: the trail asks ``spec.cond.which(value)``.
    """

    spec: CondSpec
    value: Any
    outcome: Tri
    element: int | str | None = None
    outcomes: tuple[Tri, ...] | None = None


class Hit(NamedTuple):
    """A rule that may decide: its position in the plan, its state and why."""

    position: int
    state: Tri
    observation: Observation | None


class Ruling(NamedTuple):
    """What the rules (or ``@default``) decided: the action, its code, the rule and message."""

    action: Action
    reason_code: ReasonCode | None
    rule: str
    message: str | None
