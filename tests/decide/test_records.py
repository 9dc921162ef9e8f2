"""Hot-path helpers give exactly what the model's general functions give."""

from __future__ import annotations

import datetime as dt
import re
import threading
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.decide._fast import Clock, canonical_bytes, fast_uuid7
from refusalkit.decide._records import make_decision, make_step
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    canonical_json,
    format_timestamp,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(json_values)
def test_canonical_bytes_equals_rfc8785(value: object) -> None:
    try:
        expected = canonical_json(value)
    except Exception:  # lone surrogates: both must refuse
        try:
            canonical_bytes(value)
        except Exception:
            return
        raise AssertionError("canonical_bytes accepted what RFC 8785 refuses") from None
    assert canonical_bytes(value) == expected


def test_canonical_bytes_key_order_outside_the_bmp() -> None:
    value = {"\U0001f600": 1, "\uff61": 2, "a": 3}  # UTF-16 order differs from code points
    assert canonical_bytes(value) == canonical_json(value)


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


def test_uuid7_layout_and_uniqueness_across_threads() -> None:
    ids: list[str] = []

    def work() -> None:
        ids.extend(fast_uuid7() for _ in range(2000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 8000
    for text in ids[:50]:
        parsed = uuid.UUID(text)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert text == str(parsed)
    ms = uuid.UUID(fast_uuid7()).int >> 80
    now_ms = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    assert abs(now_ms - ms) < 60_000


def test_clock_matches_format_timestamp() -> None:
    text = Clock().now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    parsed = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    assert format_timestamp(parsed) == text
    assert abs((dt.datetime.now(dt.UTC) - parsed).total_seconds()) < 60
