"""A hypothesis strategy of ``Decision`` records with any text, lone surrogates included, for the
tests that compare a fast path with the model's general one (tests/decide/test_wire.py,
tests/journal/test_records.py)."""

from __future__ import annotations

from hypothesis import strategies as st

from refusalkit.model import Action, Decision, EngineRef, PolicyRef, ReasonCode, Subject, WhyStep

__all__ = ["decisions"]

texts = st.text(max_size=12)  # any code point, lone surrogates included
maybe_texts = st.none() | texts
step_values = st.none() | texts | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False)

steps = st.builds(
    WhyStep,
    rule=texts,
    effect=st.sampled_from(["allow", "deny", "block", "audit"]),
    matched=st.booleans(),
    decisive=st.booleans(),
    field=maybe_texts,
    field_class=maybe_texts,
    value=step_values,
    test=maybe_texts,
    missing=st.booleans(),
    detail=maybe_texts,
)


@st.composite
def decisions(draw: st.DrawFn) -> Decision:
    action = draw(st.sampled_from(list(Action)))
    code = draw(st.sampled_from(list(ReasonCode))) if action.refuses else None
    return Decision(
        decision_id=draw(texts),
        action=action,
        reason_code=code,
        matched_rule=draw(texts),
        message=draw(maybe_texts),
        why_trail=tuple(draw(st.lists(steps, max_size=4))),
        policy=PolicyRef(draw(texts), draw(texts), draw(texts)),
        engine=EngineRef(draw(texts), draw(texts)),
        subject=Subject(draw(maybe_texts), draw(maybe_texts)),
        request_digest=draw(texts),
        decided_at=draw(texts),
        reason_codes_version=draw(st.integers(code.since if code else 0, 2**60)),
        client_request_id=draw(maybe_texts),
    )
