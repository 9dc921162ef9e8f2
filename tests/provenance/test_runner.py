"""Runners against a real loopback OpenAI-compatible server: replay, retries, resumption."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import RunnerError
from refusalkit.provenance import (
    CalibrationRun,
    CalibrationSet,
    CallableRunner,
    Expect,
    KeywordJudge,
    OpenAIRunner,
    arun_calibration,
    run_calibration,
    starter_set,
)
from refusalkit.provenance._cache import ResponseCache
from support.openai_server import Fault, OpenAIServer


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def test_replays_xstest_and_judges_like_the_annotators(
    replay_server: OpenAIServer,
    xstest_set: CalibrationSet,
    gpt4_refused: dict[str, bool],
    cache_path: Path,
    tmp_path: Path,
) -> None:
    runner = OpenAIRunner(replay_server.base_url, "gpt-4-replay", concurrency=16)
    run = run_calibration(xstest_set, runner, KeywordJudge(), cache=cache_path)
    assert len(replay_server.requests) == 450
    assert {r["model"] for r in replay_server.requests} == {"gpt-4-replay"}
    assert [o.id for o in run.outcomes] == [p.id for p in xstest_set]
    agree = sum(o.is_refusal == gpt4_refused[o.id] for o in run.outcomes)
    assert agree / 450 >= 0.95  # keyword judge vs two human annotators
    assert run.set_hash == xstest_set.hash
    assert run.judge.to_dict() == {"id": "keyword", "version": "3"}
    assert run.endpoint == replay_server.base_url
    assert run.started_at <= run.finished_at
    assert all(o.response is None and o.response_sha256.startswith("sha256:") for o in run.outcomes)
    # RUN.json round trip
    back = CalibrationRun.load(run.write(tmp_path / "RUN.json"))
    assert back.outcomes == run.outcomes
    assert back.to_dict() == run.to_dict()
    dist = run.to_dict()["refusal_category_distribution"]
    assert sum(c["n"] for c in dist.values()) == 450
    low, high = run.refusal_rate_interval
    assert low < run.refusal_rate < high


def test_sampling_and_system_prompt_are_sent(cache_path: Path) -> None:
    cset = CalibrationSet(starter_set().prompts[:3])
    with OpenAIServer(lambda b: "Sure, here you go.") as server:
        runner = OpenAIRunner(
            server.base_url,
            "m",
            temperature=0.7,
            max_tokens=64,
            system_prompt="be brief",
            api_key="k",
        )
        run = run_calibration(cset, runner, cache=cache_path, include_responses=True)
    body = server.requests[0]
    assert server.headers[0]["authorization"] == "Bearer k"
    assert server.headers[0]["content-type"] == "application/json"
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 64
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert run.sampling == {"temperature": 0.7, "max_tokens": 64, "system_prompt": "be brief"}
    assert run.outcomes[0].response == "Sure, here you go."
    assert run.refusal_rate == 0.0


def test_429_500_and_timeouts_are_retried_and_the_run_completes(cache_path: Path) -> None:
    cset = starter_set()
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(body: dict[str, Any]) -> str | Fault:
        prompt = _prompt(body)
        with lock:
            seen[prompt] = attempt = seen.get(prompt, 0) + 1
        index = next(i for i, p in enumerate(cset) if p.prompt == prompt)
        if attempt == 1 and index % 3 == 0:
            return Fault(429, retry_after=0.01)
        if attempt == 1 and index % 3 == 1:
            return Fault(500)
        if attempt == 2 and index % 5 == 0:
            return Fault(503, delay_s=1.5)  # longer than the client's timeout
        return "I can't help with that." if index % 2 else "Here is how."

    with OpenAIServer(flaky) as server:
        runner = OpenAIRunner(
            server.base_url, "m", timeout=0.5, max_retries=5, backoff_base=0.01, concurrency=8
        )
        run = run_calibration(cset, runner, cache=cache_path)
    assert len(run.outcomes) == len(cset)
    assert [o.is_refusal for o in run.outcomes] == [bool(i % 2) for i in range(len(cset))]
    assert len(server.requests) > len(cset)
    assert max(seen.values()) >= 3


def test_a_server_that_keeps_failing_stops_the_run_with_a_clear_error(cache_path: Path) -> None:
    with OpenAIServer(lambda b: Fault(500)) as server:
        runner = OpenAIRunner(server.base_url, "m", max_retries=2, backoff_base=0.001)
        with pytest.raises(RunnerError, match=r"gave up after 3 attempts; last: HTTP 500"):
            run_calibration(starter_set(), runner, cache=cache_path)


def test_client_errors_are_not_retried(cache_path: Path) -> None:
    with OpenAIServer(lambda b: Fault(401)) as server:
        runner = OpenAIRunner(server.base_url, "m", max_retries=5, concurrency=1)
        with pytest.raises(RunnerError, match="refused the request: HTTP 401") as info:
            run_calibration(starter_set(), runner, cache=cache_path)
    assert "API key" in info.value.hint
    assert len(server.requests) == 1


def test_retry_after_is_honoured() -> None:
    runner = OpenAIRunner("http://127.0.0.1:9/v1", "m", backoff_base=0.5, backoff_max=30)
    assert 7.0 <= runner.backoff(0, 7.0) <= 7.06
    assert runner.backoff(0, 100.0) <= 30.06  # capped
    for attempt in range(6):
        cap = min(30, 0.5 * 2**attempt)
        assert cap / 2 <= runner.backoff(attempt, None) <= cap


def test_cancelled_run_resumes_without_re_asking(cache_path: Path) -> None:
    cset = starter_set()
    release = threading.Event()

    def slow_after_20(body: dict[str, Any]) -> str:
        index = next(i for i, p in enumerate(cset) if p.prompt == _prompt(body))
        if index >= 20:
            release.wait(5)
        return "Sure." if index % 4 else "I won't help with that."

    async def interrupted(server: OpenAIServer) -> None:
        runner = OpenAIRunner(server.base_url, "m", concurrency=1)
        task = asyncio.create_task(arun_calibration(cset, runner, cache=cache_path))
        while len(server.requests) < 21:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with OpenAIServer(slow_after_20) as server:
        asyncio.run(interrupted(server))
        release.set()
        first = [_prompt(b) for b in server.requests]
        assert len(first) == 21
        run = run_calibration(
            cset, OpenAIRunner(server.base_url, "m", concurrency=4), cache=cache_path
        )
        second = [_prompt(b) for b in server.requests[21:]]
    assert len(run.outcomes) == len(cset)
    assert not set(first[:20]) & set(second)  # answered prompts were not asked again
    assert sorted(first[:20] + second) == sorted(p.prompt for p in cset)
    assert [o.is_refusal for o in run.outcomes] == [i % 4 == 0 for i in range(len(cset))]


def test_a_finished_run_is_not_reused(cache_path: Path) -> None:
    cset = CalibrationSet(starter_set().prompts[:5])
    with OpenAIServer(lambda b: "ok") as server:
        first = run_calibration(cset, OpenAIRunner(server.base_url, "m"), cache=cache_path)
        second = run_calibration(cset, OpenAIRunner(server.base_url, "m"), cache=cache_path)
    assert len(server.requests) == 10  # a later run asks afresh: drift needs fresh answers
    assert first.run_id != second.run_id


def test_callable_runner_sync_and_async(cache_path: Path) -> None:
    cset = starter_set()

    def model(prompt: str) -> str:
        return "I'm sorry, but I can't help with that." if "kill" in prompt else "Sure."

    async def amodel(prompt: str) -> str:
        await asyncio.sleep(0)
        return model(prompt)

    a = run_calibration(cset, CallableRunner(model, model="toy"), cache=cache_path)
    b = run_calibration(
        cset, CallableRunner(amodel, model="toy-async", concurrency=4), cache=cache_path
    )
    assert [o.is_refusal for o in a.outcomes] == [o.is_refusal for o in b.outcomes]
    assert [o.is_refusal for o in a.outcomes] == ["kill" in p.prompt for p in cset]
    assert a.endpoint is None
    assert a.model == "toy"
    assert {o.expect for o in a.outcomes} == {Expect.COMPLY, Expect.REFUSE}


def test_callable_errors_become_runner_errors_and_keep_answers(cache_path: Path) -> None:
    cset = CalibrationSet(starter_set().prompts[:6])
    calls: list[str] = []

    def broken(prompt: str) -> str:
        calls.append(prompt)
        if len(calls) == 4:
            raise ValueError("model crashed")
        return "fine"

    with pytest.raises(RunnerError, match="model crashed"):
        run_calibration(cset, CallableRunner(broken), cache=cache_path)
    run = run_calibration(cset, CallableRunner(broken), cache=cache_path)
    assert len(run.outcomes) == 6
    assert len(calls) == 4 + 3  # the 3 answered before the crash were not asked again


def test_cache_survives_reopen(cache_path: Path) -> None:
    cache = ResponseCache(cache_path)
    session = cache.open_run("k")
    cache.put(session.run_id, "p1", "answer")
    cache.close()
    again = ResponseCache(cache_path).open_run("k")
    assert again.resumed
    assert again.run_id == session.run_id
    assert dict(again.answered) == {"p1": "answer"}
