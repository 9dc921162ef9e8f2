"""``POST /v1/decide`` and ``POST /v1/decide/batch``: authenticate, decide, journal, then answer.

Start reading at ``decide_call``: it is the one path every decide request takes, whether it
arrives through the small ASGI fast path in front of FastAPI (``_fastpath.py``, which serves
production traffic) or through the FastAPI routes below (which publish the OpenAPI document and
serve an app mounted without the fast path). A check added there applies to both
(docs/design/service.md, One decide path).

The body is read raw and parsed once; anything that is not a well-formed request is still decided
(``deny`` + ``unavailable``, docs/design/policy.md). Decisions are journaled before the answer is
sent; when the journal cannot take them, the answer is 503 and nothing is allowed (fail closed).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from starlette.types import Send

from refusalkit._internal.binding import (
    REQUEST_ID_HEADER,
    batch_bindings,
    decide_binding,
    valid_request_id,
)
from refusalkit._internal.keys import Scope
from refusalkit._internal.records import bound_to
from refusalkit.approvals import ApprovalBook, needs_settling
from refusalkit.journal import Entry, Journal, decision_fields
from refusalkit.model import Decision
from refusalkit.server._auth import Credentials, bearer_token
from refusalkit.server._errors import ApiError, ErrorCode
from refusalkit.server._models import BatchResponseModel, DecisionModel, ErrorModel
from refusalkit.server._service import Service

__all__ = ["DECIDE_PATHS", "JsonAnswer", "decide_call", "router"]

router = APIRouter(prefix="/v1", tags=["decide"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorModel, "description": "No key, or an unknown or revoked key."},
    403: {"model": ErrorModel, "description": "The key lacks the `decide` scope."},
    413: {"model": ErrorModel, "description": "The body (or the batch) is over the limit."},
    503: {"model": ErrorModel, "description": "The journal cannot take the decision."},
}
_JSON = "application/json"
_INDEX = "Refusalkit-Journal-Index"


async def decide_call(
    service: Service,
    authorization: str | None,
    path: str,
    read_body: Callable[[], Awaitable[bytes]],
    request_id: str | None = None,
) -> JsonAnswer:
    """The decide path: check the caller's key for the ``decide`` scope, then read the body,
    decide, journal and answer.

    ``authorization`` is the raw ``Authorization`` header; the body is read only once the key
    checks out. ``request_id`` is the raw ``Refusalkit-Request-Id`` header: each decision then
    carries its binding to the request (docs/design/client.md, Answers bound to requests).
    Raises ``ApiError`` (401, 403, 413, 422, 503) with a typed body.
    """
    service.auth.check(bearer_token(authorization), Scope.DECIDE)
    if request_id is not None and not valid_request_id(request_id):
        raise ApiError(
            422,
            ErrorCode.INVALID_REQUEST,
            f"the {REQUEST_ID_HEADER} header is not 32 to 128 lowercase hex digits",
            "Send a fresh random id with each call, as refusalkit.client.Client does.",
        )
    return await DECIDE_PATHS[path](service, await read_body(), request_id)


def _body_schema(name: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{name}"}
    return {"requestBody": {"required": True, "content": {_JSON: {"schema": ref}}}}


def _entries(service: Service, decisions: list[Decision]) -> list[Entry]:
    """Each decision's RFC 8785 bytes and index columns: its journal entry and its answer.

    A decision that has no RFC 8785 form cannot be journaled, so it is not in force: the call
    fails closed with a typed 503, as when the journal cannot take it.
    """
    encode = service.encoder.encode
    try:
        return [(encode(d), decision_fields(d)) for d in decisions]
    except Exception as exc:
        raise _not_journaled(exc) from exc


def _not_journaled(exc: Exception) -> ApiError:
    return ApiError(
        503,
        ErrorCode.JOURNAL_UNAVAILABLE,
        f"the decision could not be journaled ({type(exc).__name__}); it is not in force",
        "Retry later; treat the request as refused meanwhile.",
    )


async def _journal(service: Service, entries: list[Entry]) -> list[int]:
    try:
        return await service.journal.append(entries)
    except Exception as exc:
        raise _not_journaled(exc) from exc


async def _settle(service: Service, decisions: list[Decision]) -> tuple[list[Decision], list[int]]:
    """Journal decisions in order on the writer, each request for approval settled against the
    journal's grants (docs/design/approvals.md): the allow that uses a grant (claimed in the same
    transaction), or the request again with the reason. Rare, so off the group-commit path."""
    ring = service.keyring

    def run(journal: Journal) -> tuple[list[Decision], list[int]]:
        book = ApprovalBook(journal, ring)
        out: list[Decision] = []
        indices: list[int] = []
        for decision in decisions:
            if needs_settling(decision):
                settled, index = book.append_settled(decision)
            else:
                settled, [index] = decision, journal.append([decision.to_dict()])
            out.append(settled)
            indices.append(index)
        return out, indices

    try:
        return await service.journal.write(run)
    except Exception as exc:
        raise _not_journaled(exc) from exc


# A run of 16 or more digits may be an integer beyond 2**53, which orjson reads as a float
# (above 2**64) or exactly: either way such bodies are parsed as the CLI parses a line, so the
# same bytes get the same decision (docs/decision.md, Large integers). Digits inside strings
# only take the slower, equally exact path.
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_SIXTEEN_DIGITS = b"0" * 16


def _long_number(body: bytes) -> bool:
    """Whether ``body`` holds a run of 16 or more ASCII digits: ``re.search(rb"[0-9]{16}")``,
    pinned to it by tests/server/test_big_integers.py; a byte map and a substring search scan a
    batch body about 20 times faster than the regex does."""
    return _SIXTEEN_DIGITS in body.translate(_DIGITS_AS_ZERO)


def _decide_one(service: Service, body: bytes) -> Decision:
    point = service.pack.point
    if _long_number(body):
        return point.decide_line(body)
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return point.decide_line(body)
    return point.decide(request)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads_batch(body: bytes) -> Any:
    """The batch body: orjson, or the exact stdlib parser when a long number may be in it."""
    if _long_number(body):
        return json.loads(body, parse_constant=_no_constant)
    return orjson.loads(body)


def _account(service: Service, decisions: list[Decision]) -> None:
    """Count (one counter update per action and reason code of the call) and log decisions."""
    metrics = service.metrics
    if len(decisions) == 1:  # a single decision: no tally to build
        metrics.count_decision(decisions[0].action, decisions[0].reason_code)
    else:
        tally = Counter((d.action, d.reason_code) for d in decisions)
        for (action, reason_code), n in tally.items():
            metrics.count_decision(action, reason_code, n)
    if service.config.log_decisions:
        for decision in decisions:
            service.log_decision(decision)


@router.post(
    "/decide",
    summary="Decide one request",
    response_model=None,
    responses={
        200: {"model": DecisionModel, "description": "The decision (journaled)."},
        **_ERRORS,
    },
    openapi_extra=_body_schema("DecideRequestModel"),
)
async def decide(request: Request, _documented: Credentials) -> Response:
    """Decide one request and journal the decision before answering.

    The `Refusalkit-Journal-Index` header gives the decision's index in the journal.
    """
    return (await _route_call(request)).response()


@dataclass(frozen=True, slots=True)
class JsonAnswer:
    """A 200 JSON answer, sendable as a Starlette ``Response`` or as two raw ASGI messages."""

    body: bytes
    journal_index: int | None = None

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The raw header list."""
        out = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(self.body))]
        if self.journal_index is not None:
            out.append((b"refusalkit-journal-index", b"%d" % self.journal_index))
        return out

    def response(self) -> Response:
        """As a Starlette response (the FastAPI routes)."""
        extra = {} if self.journal_index is None else {_INDEX: str(self.journal_index)}
        return Response(self.body, media_type=_JSON, headers=extra)

    async def send(self, send: Send) -> None:
        """Straight onto the ASGI channel (the fast path)."""
        await send({"type": "http.response.start", "status": 200, "headers": self.headers()})
        await send({"type": "http.response.body", "body": self.body})


def _bound(decisions: list[Decision], bindings: Iterable[str]) -> list[Decision]:
    """Each decision with its binding to the caller's request (before it is journaled)."""
    return [bound_to(d, b) for d, b in zip(decisions, bindings, strict=False)]


async def answer_decide(service: Service, body: bytes, request_id: str | None = None) -> JsonAnswer:
    """Decide one request body, journal it, and make the answer."""
    started = time.perf_counter()
    decisions = [_decide_one(service, body)]
    if request_id is not None:
        decisions = _bound(decisions, [decide_binding(request_id, body)])
    if needs_settling(decisions[0]):  # a request for approval: a grant may let it run, once
        decisions, [index] = await _settle(service, decisions)
        entries = _entries(service, decisions)
    else:
        entries = _entries(service, decisions)
        (index,) = await _journal(service, entries)
    _account(service, decisions)
    service.metrics.observe_latency("decide", time.perf_counter() - started)
    return JsonAnswer(entries[0][0], index)


def _batch_items(service: Service, body: bytes) -> list[Any]:
    try:
        data = _loads_batch(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, NaN, or too deep
        raise ApiError(
            422,
            ErrorCode.INVALID_REQUEST,
            f"the batch body is not JSON: {exc}",
            'Send {"requests": [...]}.',
        ) from exc
    items = data.get("requests") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ApiError(
            422,
            ErrorCode.INVALID_REQUEST,
            "the batch body has no `requests` list",
            'Send {"requests": [request, ...]}.',
        )
    if len(items) > service.config.max_batch:
        raise ApiError(
            413,
            ErrorCode.BATCH_TOO_LARGE,
            f"{len(items)} requests is over the batch limit of {service.config.max_batch}",
            f"Split the batch into requests of at most {service.config.max_batch}.",
        )
    return items


@router.post(
    "/decide/batch",
    summary="Decide several requests, in order",
    response_model=None,
    responses={
        200: {"model": BatchResponseModel, "description": "Decisions, in order."},
        **_ERRORS,
    },
    openapi_extra=_body_schema("BatchRequestModel"),
)
async def decide_batch(request: Request, _documented: Credentials) -> Response:
    """Decide every request with the same pack, journal them in one append, then answer."""
    return (await _route_call(request)).response()


async def _route_call(request: Request) -> JsonAnswer:
    """A FastAPI route's way into ``decide_call`` (``Credentials`` above only documents the key)."""
    service: Service = request.app.state.service
    authorization = request.headers.get("authorization")
    request_id = request.headers.get(REQUEST_ID_HEADER)
    return await decide_call(service, authorization, request.url.path, request.body, request_id)


async def answer_batch(service: Service, body: bytes, request_id: str | None = None) -> JsonAnswer:
    """Decide a batch body, journal it in one append, and make the answer."""
    started = time.perf_counter()
    items = _batch_items(service, body)
    point = service.pack.point  # one pack for the whole batch
    decisions = [point.decide(item) for item in items]
    if request_id is not None:
        decisions = _bound(decisions, batch_bindings(request_id, body))
    if any(needs_settling(d) for d in decisions):
        decisions, indices = await _settle(service, decisions)
        entries = _entries(service, decisions)
    else:
        entries = _entries(service, decisions)
        indices = await _journal(service, entries) if entries else []
    _account(service, decisions)
    service.metrics.observe_latency("batch", time.perf_counter() - started)
    return JsonAnswer(_batch_body([data for data, _ in entries], indices))


def _batch_body(decisions: list[bytes], indices: list[int]) -> bytes:
    """``{"decisions": [...], "indices": [...]}`` with each decision as its journal entry bytes."""
    return b"".join(
        (b'{"decisions":[', b",".join(decisions), b'],"indices":', orjson.dumps(indices), b"}")
    )


DECIDE_PATHS = {"/v1/decide": answer_decide, "/v1/decide/batch": answer_batch}
"""The decide endpoints and what answers each, once the caller is known."""
