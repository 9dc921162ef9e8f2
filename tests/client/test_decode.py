"""The client's fast decoder gives exactly what ``Decision.from_dict`` gives, or declines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from refusalkit.client._decode import decode_batch, decode_decision
from refusalkit.decide import DecisionEncoder
from refusalkit.enforce import fail_closed
from refusalkit.model import Approval, Decision, canonical_json
from support.decisions import decisions


@given(decisions())
def test_fast_decoding_equals_the_general_path_or_declines(decision: Decision) -> None:
    body = json.dumps(decision.to_dict()).encode()
    general = Decision.from_dict(json.loads(body))
    try:
        fast = decode_decision(body)
    except Exception:  # declined: the client falls back to the general path
        return
    assert fast == general


@given(decisions())
def test_plain_decisions_take_the_fast_path(decision: Decision) -> None:
    plain = decision.to_dict()
    plain["why_trail"] = [
        {**step, "value": None if step["value"] is None else str(step["value"])}
        for step in plain["why_trail"]
    ]
    body = json.dumps(plain, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return  # lone surrogates are not UTF-8: no service sends them
    decoded, indices = decode_batch(b'{"decisions":[%s],"indices":[7]}' % body)
    assert decoded == [Decision.from_dict(plain)]
    assert indices == [7]


def test_another_schema_is_declined() -> None:
    body = b'{"schema":"x/v9","decision_id":"d","action":"allow","matched_rule":"r",'
    body += b'"why_trail":[],"policy":{"id":"p","version":"v","digest":"d"},'
    body += b'"engine":{"name":"e","version":"1"},"subject":{},"request_digest":"h",'
    body += b'"decided_at":"t"}'
    with pytest.raises(ValueError, match=r"not a refusalkit\.decision/v1"):
        decode_decision(body)


def test_a_decision_without_a_request_binding_keeps_its_bytes() -> None:
    """Decisions journaled before ``client_request_id`` existed read back and encode unchanged,
    so their leaf hashes (and old journals) still verify; a bound one keeps its binding."""
    old = fail_closed({"tool": "read_file"}, "test")
    wire = canonical_json(old.to_dict())
    assert b"client_request_id" not in wire
    assert canonical_json(Decision.from_dict(json.loads(wire)).to_dict()) == wire
    assert decode_decision(wire) == old
    bound = Decision.from_dict({**old.to_dict(), "client_request_id": "hmac-sha256:00"})
    assert decode_decision(canonical_json(bound.to_dict())) == bound
    assert DecisionEncoder().encode(bound) == canonical_json(bound.to_dict())


def test_a_decision_with_an_approval_keeps_it() -> None:
    """The fast structs have no ``approval``: such an answer takes the general path, so the
    decision (and the entry bytes its receipt is checked against) keeps it."""
    old = fail_closed({"tool": "read_file"}, "test")
    approval = Approval("r-1", "sha256:" + "ab" * 32, "2026-01-01T00:00:00.000Z", tool="t")
    asked = Decision.from_dict({**old.to_dict(), "approval": approval.to_dict()})
    body = canonical_json(asked.to_dict())
    with pytest.raises(ValueError, match="approval"):
        decode_decision(body)
    with pytest.raises(ValueError, match="approval"):
        decode_batch(b'{"decisions":[%s]}' % body)
