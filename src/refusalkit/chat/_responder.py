"""Responders: what the turn guard wraps. A Python callable, or an OpenAI-compatible endpoint.

A responder takes the conversation as OpenAI-style messages (``[{"role", "content"}, ...]``) and
returns the articulation: a string, or a ``Reply`` with proposed tool calls. The endpoint responder
speaks ``POST {base_url}/chat/completions`` over httpx and turns every failure into a
``ResponderError`` (with one retry on 429/5xx, honouring a short ``Retry-After``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from refusalkit.chat._untrusted import clean_text
from refusalkit.chat._verdict import ToolCall
from refusalkit.errors import ResponderError

__all__ = [
    "EndpointResponder",
    "Message",
    "Reply",
    "Responder",
    "as_reply",
    "parse_openai_tool_call",
]

Message = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Reply:
    """A responder's answer: the articulation and any proposed tool calls."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()


Responder = Callable[[Sequence[Message]], "str | Reply"]


def as_reply(answer: object) -> Reply:
    """Normalise what a responder returned; anything else is a ``ResponderError``."""
    if isinstance(answer, Reply):
        return Reply(clean_text(answer.text), tuple(c.vetted() for c in answer.tool_calls))
    if isinstance(answer, str):
        return Reply(clean_text(answer))
    raise ResponderError(
        f"the responder returned {type(answer).__name__}, not str or Reply",
        hint="Return the reply text (str) or a refusalkit.chat.Reply.",
    )


def parse_openai_tool_call(obj: Mapping[str, Any]) -> ToolCall:
    """An OpenAI ``tool_calls`` item (``{"id", "function": {"name", "arguments"}}``)."""
    return ToolCall.from_openai(obj)


class EndpointResponder:
    """An OpenAI-compatible chat endpoint as a responder (``base_url`` ends in ``/v1``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __call__(self, messages: Sequence[Message]) -> Reply:
        """Send the conversation; return the first choice's content and tool calls."""
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return _parse_completion(self._post(body))

    def _post(self, body: Mapping[str, Any]) -> Any:
        for attempt in (1, 2):
            try:
                response = self._client.post(self.url, json=body)
            except httpx.HTTPError as exc:
                raise ResponderError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code == 200:
                return _json(response)
            if attempt == 1 and (response.status_code == 429 or response.status_code >= 500):
                time.sleep(min(_retry_after(response), 5.0))
                continue
            raise ResponderError(f"{self.url} answered HTTP {response.status_code}")
        raise AssertionError("unreachable")  # pragma: no cover


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "0.5")))
    except ValueError:
        return 0.5


def _json(response: httpx.Response) -> Any:
    """The body as JSON. Invalid UTF-8 is replaced (U+FFFD), not fatal: the model's text is then
    checked as received; non-finite numbers parse and are vetted later."""
    try:
        return json.loads(response.content.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise ResponderError(f"{response.url} did not answer JSON") from exc


def _tool_call(obj: Any) -> ToolCall:
    if isinstance(obj, Mapping):
        return parse_openai_tool_call(obj)
    return ToolCall("<malformed>", {}, None, f"a tool call that is a {type(obj).__name__}")


def _parse_completion(data: Any) -> Reply:
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ResponderError("the endpoint's answer has no choices[0].message") from exc
    if not isinstance(message, Mapping):
        raise ResponderError("the endpoint's choices[0].message is not an object")
    calls: Any = message.get("tool_calls") or ()
    if not isinstance(calls, list | tuple):
        calls = (calls,)
    content = message.get("content")
    return Reply(clean_text(content if content is not None else ""), tuple(map(_tool_call, calls)))
