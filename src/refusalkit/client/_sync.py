"""``Client``: the HTTP service as an ``Enforcer`` (docs/design/client.md).

``decide`` and ``decide_batch`` never raise: a service that cannot be reached, answers an error
or answers something that is not a decision gives a local ``deny`` + ``unavailable`` record.
Retries (with jittered exponential backoff) cover transport errors, 429 and 502-504, and
``unavailable`` decisions. One ``httpx.Client`` keeps connections alive between calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

import httpx

from refusalkit._internal.binding import REQUEST_ID_HEADER, new_request_id
from refusalkit.client._fallback import Fallback
from refusalkit.client._indices import Indices
from refusalkit.client._protocol import (
    Attempts,
    Failure,
    Settings,
    Setup,
    any_retryable,
    batch_answer,
    bound_batch,
    bound_decision,
    check_consistency,
    check_receipt,
    chunks,
    decision_answer,
    encode,
    first_retryable,
    need_key,
    needs_consistency,
    open_signed_checkpoint,
    read_answer,
    unreachable,
)
from refusalkit.journal import Checkpoint, Journal, Receipt
from refusalkit.model import Decision

__all__ = ["Client"]

log = logging.getLogger("refusalkit.client")
T = TypeVar("T")


class Client:
    """A remote ``Enforcer``: ``Client(url, api_key=KEY)``.

    ``public_key`` (the journal's Ed25519 key, raw or base64, obtained out of band) and
    ``origin`` pin the journal for ``checkpoint`` and ``verify_inclusion``; ``read_key`` is
    the API key with the ``read`` scope, when it is not ``api_key``. ``fallback_journal``, a
    local ``Journal``, records the decisions this client makes itself when it fails closed.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        read_key: str | None = None,
        public_key: bytes | str | None = None,
        origin: str | None = None,
        timeout: float = 2.0,
        retries: int = 2,
        backoff: float = 0.05,
        batch_size: int = 1000,
        transport: httpx.BaseTransport | None = None,
        fallback_journal: Journal | None = None,
    ) -> None:
        settings = Settings(timeout, retries, backoff, batch_size=batch_size)
        setup = Setup.make(
            url,
            api_key=api_key,
            read_key=read_key,
            public_key=public_key,
            origin=origin,
            settings=settings,
        )
        self.settings = settings
        self._public_key, self._origin = setup.public_key, setup.origin
        self._read_headers = setup.read_headers
        self._http = httpx.Client(**setup.http, transport=transport)
        self._indices = Indices()
        self._fallback = Fallback(fallback_journal)
        self._seen: Checkpoint | None = None
        self._pool: ThreadPoolExecutor | None = None

    # -- deciding (never raises) ---------------------------------------------------------------

    def decide(self, request: Mapping[str, Any]) -> Decision:
        """The service's decision on ``request``, or a local fail-closed one."""
        try:
            body = encode(request)
            decision, index = self._attempts(lambda: self._decide_once(body), first_retryable)
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing raises into a decision)
            return self._fallback.refuse([request], exc)[0]
        self._indices.remember(decision, index)
        return decision

    async def adecide(self, request: Mapping[str, Any]) -> Decision:
        """``decide`` from async code (in a worker thread; the connection pool is shared)."""
        return await asyncio.to_thread(self.decide, request)

    def decide_batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Decision]:
        """Decisions on ``requests``, in order, ``batch_size`` per call; never raises.

        Two calls are in flight at once, so the service decides one chunk while this process
        reads the last (the answers are joined in order).
        """
        parts = chunks(requests, self.settings.batch_size)
        if len(parts) <= 1:
            return [d for part in parts for d in self._chunk(part)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(2, thread_name_prefix="refusalkit-batch")
        return [d for found in self._pool.map(self._chunk, parts) for d in found]

    def _decide_once(self, body: bytes) -> tuple[Decision, int | None]:
        """One ``POST /v1/decide`` under a fresh request id; its answer must be bound to it."""
        request_id = new_request_id()
        response = self._post("/v1/decide", body, request_id)
        return bound_decision(decision_answer(response), request_id, body)

    def _batch_once(self, body: bytes, count: int) -> list[tuple[Decision, int | None]]:
        """One ``POST /v1/decide/batch`` under a fresh request id, each answer bound to it."""
        request_id = new_request_id()
        response = self._post("/v1/decide/batch", body, request_id)
        return bound_batch(batch_answer(response, count), request_id, body)

    def _chunk(self, chunk: Sequence[Mapping[str, Any]]) -> list[Decision]:
        try:
            body = encode({"requests": list(chunk)})
            answers = self._attempts(
                lambda: self._batch_once(body, len(chunk)), retry_if=any_retryable
            )
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing raises into a decision)
            return self._fallback.refuse(chunk, exc)
        for decision, index in answers:
            self._indices.remember(decision, index)
        return [decision for decision, _ in answers]

    def _post(self, path: str, body: bytes, request_id: str) -> httpx.Response:
        try:
            return self._http.post(path, content=body, headers={REQUEST_ID_HEADER: request_id})
        except httpx.HTTPError as exc:
            raise Failure(
                f"the service cannot be reached ({type(exc).__name__})", retry=True
            ) from exc

    def _attempts(self, call: Callable[[], T], retry_if: Callable[[T], bool]) -> T:
        """``call`` until it answers, retrying failures and ``retryable`` answers with backoff."""
        plan = Attempts(self.settings, retry_if)
        while True:
            delay: float | None
            try:
                found = call()
            except Failure as failure:
                delay = plan.after_failure(failure)
            else:
                delay = plan.after_answer(found)
                if delay is None:
                    return found
            time.sleep(delay)

    # -- the journal (raises: these are checks, not decisions) -----------------------------------

    def _get(self, path: str, **params: int) -> Any:
        try:
            response = self._http.get(path, params=params, headers=self._read_headers)
        except httpx.HTTPError as exc:
            raise unreachable(exc) from exc
        return read_answer(response)

    def checkpoint(self) -> Checkpoint:
        """The journal's latest checkpoint, its signature checked with the pinned key, and
        (after the first) proven consistent with the last one this client saw (RFC 9162
        §2.1.4): a log that rewrote its history fails here. Raises ``VerificationError``."""
        key = need_key(self._public_key)
        _, new = open_signed_checkpoint(self._get("/v1/journal/checkpoint"), key, self._origin)
        old = self._seen
        if old is not None and needs_consistency(old, new):
            proof = self._get("/v1/journal/proof/consistency", old=old.size, new=new.size)
            check_consistency(old, new, proof)
        self._seen = new
        return new

    def verify_inclusion(self, decision: Decision, *, index: int | None = None) -> Receipt:
        """Fetch ``decision``'s receipt and check it offline against the pinned key.

        Raises ``VerificationError`` unless this exact record is in the signed log.
        """
        key = need_key(self._public_key)
        where = self._indices.of(decision, index)
        data = self._get("/v1/journal/receipt", index=where)
        return check_receipt(decision, data, key, self._origin, where)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pool (and the batch threads)."""
        if self._pool is not None:
            self._pool.shutdown()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
