"""The bridge in-process, on the memory streams the SDK's transports hand out, over a real gate
and SQLite journal: what it forwards, answers, drops and strips."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.keyring import Keyring
from refusalkit.mcp_proxy import META_KEY, Bridge, Caller, open_gate
from support.mcp_helpers import PACK

KEYRING = Keyring.generate()
CALLER = Caller(agent="tester", session="s-1")


async def _run_bridge(
    journal: Path,
    from_client: list[Any],
    from_server: list[Any],
    *,
    lock: bool = False,
    settle_s: float = 0.3,
) -> tuple[list[Any], list[Any]]:
    """Feed messages to both sides; what reached the server and the client."""
    point = DecisionPoint(load_pack(PACK), KEYRING)
    down_in_w, down_in = anyio.create_memory_object_stream[Any](100)
    down_out, down_out_r = anyio.create_memory_object_stream[Any](100)
    up_in_w, up_in = anyio.create_memory_object_stream[Any](100)
    up_out, up_out_r = anyio.create_memory_object_stream[Any](100)
    async with open_gate(point, str(journal), KEYRING, server_name="py", timeout_s=5) as gate:
        holder = sqlite3.connect(journal, isolation_level=None) if lock else None
        if holder is not None:
            holder.execute("BEGIN EXCLUSIVE")  # decisions wait on the journal meanwhile
        async with anyio.create_task_group() as tg:
            tg.start_soon(Bridge(gate, CALLER).run, down_in, down_out, up_in, up_out)
            for message in from_client:
                await down_in_w.send(SessionMessage(message))
            for message in from_server:
                await up_in_w.send(SessionMessage(message))
            await anyio.sleep(settle_s)
            if holder is not None:
                holder.execute("ROLLBACK")
                holder.close()
            await anyio.sleep(settle_s)
            tg.cancel_scope.cancel()
    seen = ([m.message for m in _drain(up_out_r)], [m.message for m in _drain(down_out_r)])
    for stream in (down_in_w, down_in, down_out, down_out_r, up_in_w, up_in, up_out, up_out_r):
        stream.close()
    return seen


def _drain(stream: Any) -> list[Any]:
    out = []
    while True:
        try:
            out.append(stream.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return out


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> JSONRPCRequest:
    params = {"name": name, "arguments": arguments}
    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)


def test_a_call_cancelled_while_decided_is_dropped(tmp_path: Path) -> None:
    cancel = JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 7}
    )
    to_server, to_client = anyio.run(
        lambda: _run_bridge(
            tmp_path / "j.db", [_call(7, "echo", {"text": "x"}), cancel], [], lock=True
        )
    )
    assert to_server == []  # neither the call nor the cancel reached the server
    assert to_client == []  # and the client gets no answer for a cancelled request


def test_an_allowed_call_and_other_messages_pass_unchanged(tmp_path: Path) -> None:
    ping = JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
    call = _call(2, "echo", {"text": "x"})
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"x": 1})
    to_server, to_client = anyio.run(lambda: _run_bridge(tmp_path / "j.db", [ping, call], [note]))
    assert to_server == [ping, call]
    assert to_client == [note]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.sampled_from(["a", "b", META_KEY]), json_values, max_size=3)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    meta=objects,
    structured=objects,
    rest=st.dictionaries(st.sampled_from(["content", "x"]), json_values),
)
def test_no_answer_from_the_server_carries_the_proxys_key(
    tmp_path: Path, meta: dict[str, Any], structured: dict[str, Any], rest: dict[str, Any]
) -> None:
    result = {**rest, "_meta": meta, "structuredContent": structured}
    answer = JSONRPCResponse(jsonrpc="2.0", id=5, result=result)
    _, [seen] = anyio.run(lambda: _run_bridge(tmp_path / "h.db", [], [answer], settle_s=0.05))
    assert META_KEY not in seen.result["_meta"]
    assert META_KEY not in seen.result["structuredContent"]
    assert seen.result["_meta"] == {k: v for k, v in meta.items() if k != META_KEY}
    assert seen.result["structuredContent"] == {
        k: v for k, v in structured.items() if k != META_KEY
    }
    assert {k: seen.result[k] for k in rest} == rest


def test_a_malformed_message_is_logged_by_kind_never_by_its_bytes() -> None:
    from pydantic import ValidationError  # noqa: PLC0415

    from refusalkit.mcp_proxy._bridge import describe_malformed as _kind  # noqa: PLC0415

    line = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 7, "x": "hunter2-pw"}'
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        described = _kind(exc)
    else:
        raise AssertionError("the message should not validate")
    assert described.startswith("ValidationError (")
    assert "hunter2" not in described
    assert "params" in described
    assert _kind(ValueError("Separator is found, but chunk is longer than limit")) == "ValueError"


def test_the_sdks_parse_error_tracebacks_lose_the_input() -> None:
    """The SDK's transports log a message they cannot parse with ``logger.exception``, whose
    traceback quotes the input; the proxies keep the line and name only the error's kind."""
    import io  # noqa: PLC0415
    import logging  # noqa: PLC0415

    from pydantic import ValidationError  # noqa: PLC0415

    from refusalkit.mcp_proxy._logsafe import SDK_LOGGERS, quiet_sdk_parse_errors  # noqa: PLC0415

    quiet_sdk_parse_errors()
    quiet_sdk_parse_errors()  # idempotent
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger(SDK_LOGGERS[0])
    logger.addHandler(handler)
    try:
        try:
            jsonrpc_message_adapter.validate_json(
                b'{"jsonrpc": "2.0", "id": 1, "result": "AKIA-secret"}'
            )
        except ValidationError:
            logger.exception("Failed to parse JSONRPC message from server")
    finally:
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert logged.startswith("Failed to parse JSONRPC message from server: ValidationError (")
    assert "AKIA-secret" not in logged
    assert "Traceback" not in logged
