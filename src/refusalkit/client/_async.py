"""``AsyncClient``: ``Client``'s calls as coroutines over one ``httpx.AsyncClient``.

The same protocol and the same guarantees (docs/design/client.md): ``decide`` and
``decide_batch`` never raise and fail closed; ``checkpoint`` and ``verify_inclusion`` check what
the service sends against the pinned journal key. Bind one to one event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
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

__all__ = ["AsyncClient"]

log = logging.getLogger("refusalkit.client")
T = TypeVar("T")


class AsyncClient:
    """The async twin of ``Client``; ``decide`` is a coroutine (also as ``adecide``)."""

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
        transport: httpx.AsyncBaseTransport | None = None,
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
        self._http = httpx.AsyncClient(**setup.http, transport=transport)
        self._indices = Indices()
        self._fallback = Fallback(fallback_journal)
        self._seen: Checkpoint | None = None

    async def decide(self, request: Mapping[str, Any]) -> Decision:
        """The service's decision on ``request``, or a local fail-closed one; never raises."""
        try:
            body = encode(request)

            async def once() -> tuple[Decision, int | None]:
                request_id = new_request_id()
                response = await self._post("/v1/decide", body, request_id)
                return bound_decision(decision_answer(response), request_id, body)

            decision, index = await self._attempts(once, first_retryable)
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing raises into a decision)
            return self._fallback.refuse([request], exc)[0]
        self._indices.remember(decision, index)
        return decision

    adecide = decide

    async def decide_batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Decision]:
        """Decisions on ``requests``, in order, ``batch_size`` per call; never raises."""
        parts = chunks(requests, self.settings.batch_size)
        gate = asyncio.Semaphore(2)  # two calls in flight, as Client does

        async def one(part: Sequence[Mapping[str, Any]]) -> list[Decision]:
            async with gate:
                return await self._chunk(part)

        found = await asyncio.gather(*(one(part) for part in parts))
        return [d for decisions in found for d in decisions]

    async def _chunk(self, chunk: Sequence[Mapping[str, Any]]) -> list[Decision]:
        try:
            body = encode({"requests": list(chunk)})

            async def once() -> list[tuple[Decision, int | None]]:
                request_id = new_request_id()
                response = await self._post("/v1/decide/batch", body, request_id)
                return bound_batch(batch_answer(response, len(chunk)), request_id, body)

            answers = await self._attempts(once, any_retryable)
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing raises into a decision)
            return self._fallback.refuse(chunk, exc)
        for decision, index in answers:
            self._indices.remember(decision, index)
        return [decision for decision, _ in answers]

    async def _post(self, path: str, body: bytes, request_id: str) -> httpx.Response:
        try:
            headers = {REQUEST_ID_HEADER: request_id}
            return await self._http.post(path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            problem = f"the service cannot be reached ({type(exc).__name__})"
            raise Failure(problem, retry=True) from exc

    async def _attempts(self, call: Callable[[], Awaitable[T]], retry_if: Callable[[T], bool]) -> T:
        plan = Attempts(self.settings, retry_if)
        while True:
            delay: float | None
            try:
                found = await call()
            except Failure as failure:
                delay = plan.after_failure(failure)
            else:
                delay = plan.after_answer(found)
                if delay is None:
                    return found
            await asyncio.sleep(delay)

    async def _get(self, path: str, **params: int) -> Any:
        try:
            response = await self._http.get(path, params=params, headers=self._read_headers)
        except httpx.HTTPError as exc:
            raise unreachable(exc) from exc
        return read_answer(response)

    async def checkpoint(self) -> Checkpoint:
        """As ``Client.checkpoint``: signature and consistency checked (RFC 9162 §2.1.4)."""
        key = need_key(self._public_key)
        data = await self._get("/v1/journal/checkpoint")
        _, new = open_signed_checkpoint(data, key, self._origin)
        old = self._seen
        if old is not None and needs_consistency(old, new):
            proof = await self._get("/v1/journal/proof/consistency", old=old.size, new=new.size)
            check_consistency(old, new, proof)
        self._seen = new
        return new

    async def verify_inclusion(self, decision: Decision, *, index: int | None = None) -> Receipt:
        """As ``Client.verify_inclusion``: this exact record is in the signed log, or raise."""
        key = need_key(self._public_key)
        where = self._indices.of(decision, index)
        data = await self._get("/v1/journal/receipt", index=where)
        return check_receipt(decision, data, key, self._origin, where)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
