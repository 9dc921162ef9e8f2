"""The stdio lines' orjson writer (``mcp_proxy/_jsonrpc.py``) against the SDK's.

Speed twin: ``dump_message`` imported from its internal module to pin it to its reference,
``model_dump_json(by_alias=True, exclude_unset=True)``: the same bytes for every message the
SDK's validation reads from a line. Hostile envelopes (a boolean id, an extra member, a member
twice, a long integer) are drawn as often as plain ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mcp_types import JSONRPCRequest, jsonrpc_message_adapter
from pydantic import ValidationError

from refusalkit.mcp_proxy._jsonrpc import dump_message
from support.strategies import SAFE_INTEGERS, json_values

values = json_values(
    st.none()
    | st.booleans()
    | SAFE_INTEGERS
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
ids = st.none() | st.booleans() | SAFE_INTEGERS | st.text(max_size=5) | st.floats(-2, 2)
members = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]),
        "id": ids,
        "method": st.sampled_from(["tools/call", "ping"]) | values,
        "params": st.none() | st.dictionaries(st.text(max_size=5), values, max_size=4) | values,
        "result": st.dictionaries(st.text(max_size=5), values, max_size=4) | values,
        "error": st.fixed_dictionaries({"code": st.integers(-5, 5), "message": st.text()}),
        "extra": values,
    },
)


def _same(line: bytes) -> None:
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return  # dropped as malformed: nothing is written
    reference = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    assert dump_message(message) == reference


@given(envelope=members)
@example(envelope={"jsonrpc": "2.0", "id": True, "method": "tools/call"})
@example(envelope={"jsonrpc": "2.0", "id": 2**64, "method": "ping"})
@example(envelope={"jsonrpc": "2.0", "id": 1, "result": {"n": -(2**63) - 1}})
def test_every_envelope_reads_and_writes_as_the_sdks(envelope: dict[str, Any]) -> None:
    _same(json.dumps(envelope, ensure_ascii=False).encode() + b"\n")


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}',
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x","text":"y"}]}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"s":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":NaN}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":-0.0,"m":-0,"e":1E2}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"x"}]',
        b'{"jsonrpc":"2.0","id":1,"method":"x"',
        b'  {"jsonrpc":"2.0","method":"notifications/initialized"}  \r\n',
    ],
)
def test_hostile_and_odd_lines_read_as_the_sdks(line: bytes) -> None:
    """A member twice is written once (what is forwarded is what was decided); NaN, -0.0 and
    long numbers as the SDK writes them."""
    _same(line)


def test_a_message_orjson_cannot_write_exactly_is_written_by_the_sdk() -> None:
    message = JSONRPCRequest(jsonrpc="2.0", id=1, method="x", params={"n": 2**70, "k": {1: 2}})
    reference = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    assert dump_message(message) == reference
