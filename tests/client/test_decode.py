"""The client's fast decoder gives exactly what ``Decision.from_dict`` gives, or declines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from refusalkit.client._decode import decode_batch, decode_decision
from refusalkit.model import Decision
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
