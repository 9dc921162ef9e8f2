"""Runners: where the calibration prompts are sent (docs/design/provenance.md).

- :class:`OpenAIRunner`: an OpenAI-compatible chat-completions endpoint over httpx (async), with
  bounded concurrency, timeouts, and retries with exponential backoff and jitter on 429, 5xx,
  timeouts and connection errors, honouring ``Retry-After`` (RFC 9110 §10.2.3). Connections are
  spread over pools of at most 8 (an httpcore pool's per-request cost grows with its size; one
  pool of 32 costs ~3x the CPU per request of four pools of 8), and requests go straight to
  httpx's transport (no client-level redirect, cookie or auth machinery: ~30% less CPU).
- :class:`CallableRunner`: any Python callable ``prompt -> str`` (sync or async).
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import json
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import certifi
import httpx

from refusalkit.errors import RunnerError

__all__ = ["CallableRunner", "OpenAIRunner", "Runner"]

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_SHARD = 8  # connections per httpx pool: a pool's per-request cost grows with its size


class Runner(Protocol):
    """Sends one prompt to a model and returns its answer text."""

    model: str
    concurrency: int

    @property
    def endpoint(self) -> str | None:
        """The endpoint URL, or None for an in-process model."""
        ...

    @property
    def sampling(self) -> Mapping[str, Any]:
        """Sampling parameters; part of the cache key and of RUN.json."""
        ...

    async def complete(self, prompt: str) -> str:
        """The model's answer to one prompt."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return str(message or response.text[:200] or response.reason_phrase)


def _content(response: httpx.Response, url: httpx.URL) -> str:
    try:
        message = response.json()["choices"][0]["message"]
        content = message.get("content")
        if content is None:  # structured refusals put the text in "refusal"
            content = message.get("refusal") or ""
        return str(content)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise RunnerError(
            f"{url} did not answer a chat completion: {response.text[:200]!r}",
            hint="Give the OpenAI-compatible base URL, e.g. http://host:8000/v1.",
        ) from None


def _transports(url: httpx.URL, concurrency: int) -> list[httpx.AsyncHTTPTransport]:
    """Pools of at most ``_SHARD`` connections sharing one TLS context (none for plain http)."""
    shards = -(-concurrency // _SHARD)
    per = -(-concurrency // shards)
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    verify: ssl.SSLContext | bool = False  # plain http: no TLS (redirects are not followed)
    if url.scheme == "https":  # one context for all pools: each costs ~50 ms to build
        verify = ssl.create_default_context(cafile=certifi.where())
    return [httpx.AsyncHTTPTransport(limits=limits, verify=verify) for _ in range(shards)]


class OpenAIRunner:
    """An OpenAI-compatible chat-completions endpoint (``{endpoint}/chat/completions``)."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        concurrency: int = 16,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        temperature: float = 0.0,
        max_tokens: int = 512,
        system_prompt: str | None = None,
    ) -> None:
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise RunnerError(
                "concurrency must be >= 1, max_retries >= 0 and timeout > 0",
                hint="Check --concurrency, --max-retries and --timeout.",
            )
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._url = httpx.URL(f"{self.endpoint}/chat/completions")  # parsed once, not per request
        self._system_prompt = system_prompt
        self._params = {"temperature": temperature, "max_tokens": max_tokens}
        self._headers = {"content-type": "application/json", "accept": "application/json"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._timeout = {"timeout": httpx.Timeout(timeout).as_dict()}
        self._transports = _transports(self._url, concurrency)
        self._in_flight = [0] * len(self._transports)
        self._random = random.Random()  # noqa: S311 (jitter, not cryptography)

    @property
    def sampling(self) -> dict[str, Any]:
        """Temperature, max_tokens and the system prompt (when any)."""
        return {**self._params, "system_prompt": self._system_prompt}

    def _body(self, prompt: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": prompt}]
        if self._system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self._system_prompt})
        return {"model": self.model, "messages": messages, **self._params}

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): Retry-After, else 2^n with jitter."""
        if retry_after is not None:
            return min(retry_after, self.backoff_max) + self._random.uniform(
                0, self.backoff_base / 10
            )
        cap = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        return cap / 2 + self._random.uniform(0, cap / 2)

    async def _post(
        self, transport: httpx.AsyncHTTPTransport, body: dict[str, Any]
    ) -> httpx.Response:
        """POST straight to the transport: no redirects, cookies or auth flows to pay for."""
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        request = httpx.Request(
            "POST", self._url, content=content, headers=self._headers, extensions=self._timeout
        )
        response = await transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def _attempt(self, body: dict[str, Any]) -> tuple[str | None, str, float | None]:
        """One POST: (content, "", _) on success, else (None, why, retry_after) when retryable."""
        shard = self._in_flight.index(min(self._in_flight))  # the least busy pool
        self._in_flight[shard] += 1
        try:
            response = await self._post(self._transports[shard], body)
        except httpx.TimeoutException as exc:
            return None, f"timed out ({type(exc).__name__})", None
        except httpx.TransportError as exc:
            return None, f"connection failed ({exc})", None
        finally:
            self._in_flight[shard] -= 1
        if response.status_code == 200:
            return _content(response, self._url), "", None
        why = f"HTTP {response.status_code}: {_error_message(response)}"
        if response.status_code in _RETRY_STATUS:
            return None, why, _retry_after(response)
        raise RunnerError(
            f"{self._url} refused the request: {why}",
            hint="Check --model, the API key (OPENAI_API_KEY or --api-key-env) and the URL.",
        )

    async def complete(self, prompt: str) -> str:
        """Ask one prompt, retrying transient failures; :class:`RunnerError` when it gives up."""
        body = self._body(prompt)
        why = ""
        for attempt in range(self.max_retries + 1):
            content, why, retry_after = await self._attempt(body)
            if content is not None:
                return content
            if attempt < self.max_retries:
                await asyncio.sleep(self.backoff(attempt, retry_after))
        raise RunnerError(
            f"{self._url}: gave up after {self.max_retries + 1} attempts; last: {why}",
            hint="Check the endpoint; a rerun resumes from the cache and loses nothing.",
        )

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        for transport in self._transports:
            await transport.aclose()


class CallableRunner:
    """A Python callable ``prompt -> str`` (or an ``async`` one) as the model under test."""

    def __init__(
        self,
        fn: Callable[[str], str] | Callable[[str], Awaitable[str]],
        *,
        model: str = "callable",
        sampling: Mapping[str, Any] | None = None,
        concurrency: int = 1,
    ) -> None:
        self._fn = fn
        self.model = model
        self.concurrency = max(1, concurrency)
        self._sampling = dict(sampling or {})

    @property
    def endpoint(self) -> str | None:
        """None: the model is in-process."""
        return None

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling parameters given (recorded, part of the cache key)."""
        return dict(self._sampling)

    async def complete(self, prompt: str) -> str:
        """Call the function; errors become :class:`RunnerError`."""
        try:
            result = self._fn(prompt)
            if inspect.isawaitable(result):
                result = await result
        except RunnerError:
            raise
        except Exception as exc:
            raise RunnerError(
                f"the model callable raised {type(exc).__name__}: {exc}",
                hint="Fix the callable; a rerun resumes from the cache.",
            ) from exc
        return str(result)

    async def aclose(self) -> None:
        """Nothing to release."""
