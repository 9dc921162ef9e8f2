"""Hot-path helpers give exactly what the model's general functions give, invariants included."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import refusalkit.decide
from refusalkit._internal.records import make_decision, make_step, make_subject
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


REFS = (PolicyRef("p", "1", "sha256:0"), EngineRef("refusalkit", "0"), Subject("a", None))


def _decision_fields(action: Action, code: ReasonCode | None) -> tuple[object, ...]:
    return (
        "id",
        action,
        code,
        "r",
        "m",
        (),
        *REFS,
        "hmac-sha256:k1:00",
        "2026-01-01T00:00:00.000Z",
    )


@pytest.mark.parametrize("code", list(ReasonCode))
def test_the_reason_code_version_is_the_codes_own(code: ReasonCode) -> None:
    """Built slot by slot or by the constructor, a record states the version its code was
    added in (``ReasonCode.since``): a version 2 code is never written as version 1."""
    fields = _decision_fields(Action.DENY, code)
    built = make_decision(*fields)  # type: ignore[arg-type]
    assert built.reason_codes_version == code.since
    assert built == Decision(*fields)  # type: ignore[arg-type]
    assert Decision.from_dict(built.to_dict()) == built
    assert make_decision(*_decision_fields(Action.ALLOW, None)).reason_codes_version == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "code"),
    [(Action.DENY, None), (Action.BLOCK, None), (Action.ALLOW, ReasonCode.POLICY_DENIED),
     (Action.AUDIT, ReasonCode.RATE_LIMITED)],
)  # fmt: skip
def test_no_builder_makes_an_invalid_decision(action: Action, code: ReasonCode | None) -> None:
    fields = _decision_fields(action, code)
    with pytest.raises(ValueError, match="decision"):
        make_decision(*fields)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="decision"):
        Decision(*fields)  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="make_decision"):
        deprecated = refusalkit.decide.make_decision
    with pytest.raises(ValueError, match="decision"):
        deprecated(*fields)


def test_the_deprecated_builder_refuses_an_older_version_than_the_codes() -> None:
    fields = _decision_fields(Action.DENY, ReasonCode.RATE_LIMITED)
    with pytest.warns(DeprecationWarning, match="make_decision"):
        builder = refusalkit.decide.make_decision
    with pytest.raises(ValueError, match="version 2 reason code"):
        builder(*fields, 1)
    assert builder(*fields).reason_codes_version == 2


texts = st.none() | st.text(max_size=8)


@given(
    st.text(min_size=1, max_size=8),
    st.sampled_from(["allow", "deny", "block", "audit", "require-approval"]),
    st.booleans(),
    st.booleans(),
    st.tuples(texts, texts, texts, texts, texts),
    st.booleans(),
)
def test_records_filled_as_open_twins_are_the_records_themselves(
    rule: str,
    effect: str,
    matched: bool,
    decisive: bool,
    named: tuple[str | None, ...],
    missing: bool,
) -> None:
    """``make_step``, ``make_decision`` and ``make_subject`` (a speed twin: each fills an open
    class of the record's slots, then gives it the record's class) give records of exactly the
    record's class, equal to the constructor's in every field, with the same hash, frozen."""
    field, field_class, value, test, detail = named
    step = make_step(
        rule,
        effect,
        matched=matched,
        decisive=decisive,
        field=field,
        field_class=field_class,
        value=value,
        test=test,
        missing=missing,
        detail=detail,
    )
    expected = WhyStep(rule, effect, matched, decisive, field, field_class, value, test, missing,
                       detail)  # fmt: skip
    subject = make_subject(field, value)
    assert type(subject) is Subject
    assert subject == Subject(field, value)
    fields = (
        rule, Action.DENY, ReasonCode.POLICY_DENIED, effect, detail, (step,), *REFS[:2], subject,
        "hmac-sha256:k1:00", "2026-01-01T00:00:00.000Z",
    )  # fmt: skip
    built = make_decision(*fields)
    for made, reference in ((step, expected), (built, Decision(*fields))):
        assert type(made) is type(reference)
        assert dataclasses.astuple(made) == dataclasses.astuple(reference)
        assert made == reference
        assert hash(made) == hash(reference)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, dataclasses.fields(made)[0].name, "x")
    assert Decision.from_dict(built.to_dict()) == built
