"""Hot-path helpers give exactly what the model's general functions give."""

from __future__ import annotations

from refusalkit.decide._records import make_decision, make_step
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
)


def test_make_step_and_make_decision_equal_the_constructors() -> None:
    args = ("r", "deny", True, True, "args.path", "c", "v", "t", True, "d")
    named = make_step(
        "r",
        "deny",
        matched=True,
        decisive=True,
        field="args.path",
        field_class="c",
        value="v",
        test="t",
        missing=True,
        detail="d",
    )
    assert named == WhyStep(*args)
    assert make_step("r", "allow", matched=False, decisive=False) == WhyStep(
        "r", "allow", False, False
    )
    fields = (
        "id",
        Action.DENY,
        ReasonCode.POLICY_DENIED,
        "r",
        "m",
        (WhyStep(*args),),
        PolicyRef("p", "1", "sha256:0"),
        EngineRef("refusalkit", "0"),
        Subject("a", None),
        "hmac-sha256:k1:00",
        "2026-01-01T00:00:00.000Z",
    )
    built = make_decision(*fields)
    assert built == Decision(*fields)
    assert Decision.from_dict(built.to_dict()) == built
