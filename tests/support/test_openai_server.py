"""The loopback OpenAI-compatible server answers like the real API, with faults and concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from support.openai_server import Fault, OpenAIServer


def _chat(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], "temperature": 0}


def test_chat_completion_replies_and_logs_requests() -> None:
    def reply(body: dict[str, Any]) -> str:
        return "echo: " + body["messages"][-1]["content"]

    with OpenAIServer(reply) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        r = httpx.post(f"{server.base_url}/chat/completions", json=_chat("m1", "hello"))
        assert r.status_code == 200
        data = r.json()
        assert data["object"] == "chat.completion"
        assert data["model"] == "m1"
        assert data["choices"][0]["message"] == {"role": "assistant", "content": "echo: hello"}
        assert server.requests == [_chat("m1", "hello")]


def test_models_listing() -> None:
    with OpenAIServer(lambda b: "x", models=("a", "b")) as server:
        r = httpx.get(f"{server.base_url}/models")
        assert r.status_code == 200
        assert [m["id"] for m in r.json()["data"]] == ["a", "b"]


def test_fault_429_carries_retry_after_and_500() -> None:
    answers: list[str | Fault] = [Fault(429, retry_after=1.5), Fault(500), "ok"]

    with OpenAIServer(lambda b: answers.pop(0)) as server:
        url = f"{server.base_url}/chat/completions"
        r1 = httpx.post(url, json=_chat("m", "a"))
        assert r1.status_code == 429
        assert r1.headers["retry-after"] == "1.5"
        r2 = httpx.post(url, json=_chat("m", "a"))
        assert r2.status_code == 500
        assert "retry-after" not in r2.headers
        r3 = httpx.post(url, json=_chat("m", "a"))
        assert r3.status_code == 200
        assert len(server.requests) == 3


def test_fault_delay_longer_than_timeout_is_a_timeout() -> None:
    server = OpenAIServer(lambda b: Fault(500, delay_s=1.0))
    with server, pytest.raises(httpx.TimeoutException):
        httpx.post(f"{server.base_url}/chat/completions", json=_chat("m", "a"), timeout=0.2)


def test_bad_json_and_unknown_route() -> None:
    with OpenAIServer(lambda b: "x") as server:
        r = httpx.post(f"{server.base_url}/chat/completions", content=b"{not json")
        assert r.status_code == 400
        assert httpx.get(f"{server.base_url}/nothing").status_code == 404
        assert server.requests == []


def test_a_raising_reply_is_a_500() -> None:
    def reply(body: dict[str, Any]) -> str:
        raise ValueError("boom")

    with OpenAIServer(reply) as server:
        r = httpx.post(f"{server.base_url}/chat/completions", json=_chat("m", "a"))
        assert r.status_code == 500
        assert "boom" in r.json()["error"]["message"]


def test_concurrency_32_keep_alive() -> None:
    async def run(base_url: str) -> list[str]:
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=10) as client:

            async def one(i: int) -> str:
                r = await client.post("/chat/completions", json=_chat("m", str(i)))
                r.raise_for_status()
                return str(r.json()["choices"][0]["message"]["content"])

            return await asyncio.gather(*(one(i) for i in range(200)))

    with OpenAIServer(lambda b: b["messages"][0]["content"], latency_s=0.01) as server:
        got = asyncio.run(run(server.base_url))
        assert got == [str(i) for i in range(200)]
        assert sorted(int(b["messages"][0]["content"]) for b in server.requests) == list(range(200))
