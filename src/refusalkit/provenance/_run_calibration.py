"""Run a calibration set through a runner, judge every answer, and produce a RUN record.

Answers are stored in the :class:`ResponseCache` one by one as they arrive, so an interrupted run
(killed, cancelled, or stopped by an endpoint that gives up) resumes where it stopped; the judge is
applied at the end to every answer, cached or new.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from refusalkit.model import format_timestamp, now_utc
from refusalkit.provenance._cache import ResponseCache, digest_of
from refusalkit.provenance._judges import Judge, Judgement, KeywordJudge, ref_of
from refusalkit.provenance._model_runners import Runner
from refusalkit.provenance._run_record import CalibrationRun, JudgedResponse, response_digest
from refusalkit.provenance._set import CalibrationPrompt, CalibrationSet

__all__ = ["arun_calibration", "response_key", "run_calibration"]


def _key_prefix(runner: Runner) -> str:
    return digest_of({"model": runner.model, "sampling": dict(runner.sampling)})


def response_key(runner: Runner, prompt: CalibrationPrompt, prefix: str | None = None) -> str:
    """The cache key of one answer: SHA-256 over (model + sampling digest, prompt hash)."""
    prompt_hash = hashlib.sha256(prompt.prompt.encode("utf-8")).hexdigest()
    head = prefix if prefix is not None else _key_prefix(runner)
    return hashlib.sha256(f"{head}:{prompt_hash}".encode("ascii")).hexdigest()


def _run_key(runner: Runner, cset: CalibrationSet) -> str:
    return digest_of(
        {
            "model": runner.model,
            "endpoint": runner.endpoint,
            "set": cset.hash,
            "sampling": dict(runner.sampling),
        }
    )


@contextlib.contextmanager
def _progress(show: bool | Console, total: int, done: int) -> Iterator[Progress | None]:
    if show is False:
        yield None
        return
    console = show if isinstance(show, Console) else Console(stderr=True)
    columns = (TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        bar.add_task("prompts", total=total, completed=done)
        yield bar


async def _ask_all(
    runner: Runner,
    todo: list[tuple[str, CalibrationPrompt]],
    store: ResponseCache,
    run_id: str,
    bar: Progress | None,
) -> dict[str, str]:
    answers: dict[str, str] = {}
    queue = list(reversed(todo))

    async def worker() -> None:
        while queue:
            key, prompt = queue.pop()
            answers[key] = text = await runner.complete(prompt.prompt)
            store.put(run_id, key, text)
            if bar is not None:
                bar.advance(bar.task_ids[0])

    tasks = [asyncio.create_task(worker()) for _ in range(min(runner.concurrency, len(todo)))]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # re-raises the first failure
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return answers


async def arun_calibration(
    cset: CalibrationSet,
    runner: Runner,
    judge: Judge | None = None,
    *,
    cache: ResponseCache | str | Path | None = None,
    fresh: bool = False,
    include_responses: bool = False,
    progress: bool | Console = False,
) -> CalibrationRun:
    """Ask every prompt (resuming an unfinished run), judge the answers, return the run."""
    judge = judge or KeywordJudge()
    store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
    try:
        session = store.open_run(_run_key(runner, cset), fresh=fresh)
        prefix = _key_prefix(runner)
        keyed = [(response_key(runner, p, prefix), p) for p in cset]
        todo = [(k, p) for k, p in keyed if k not in session.answered]
        with _progress(progress, len(keyed), len(keyed) - len(todo)) as bar:
            answers = {
                **session.answered,
                **await _ask_all(runner, todo, store, session.run_id, bar),
            }
        verdicts = await _judge_all(judge, [(p.prompt, answers[k]) for k, p in keyed])
        outcomes = tuple(
            _outcome(p, answers[k], v, include_responses)
            for (k, p), v in zip(keyed, verdicts, strict=True)
        )
        store.finish(session.run_id)
    finally:
        await runner.aclose()
        closer = getattr(judge, "aclose", None)
        if closer is not None:
            await closer()
        if store is not cache:
            store.close()
    return CalibrationRun(
        run_id=session.run_id,
        model=runner.model,
        endpoint=runner.endpoint,
        judge=ref_of(judge),
        set_hash=cset.hash,
        set_name=cset.name,
        sampling=dict(runner.sampling),
        started_at=session.started_at,
        finished_at=format_timestamp(now_utc()),
        outcomes=outcomes,
    )


async def _judge_all(judge: Judge, pairs: list[tuple[str, str]]) -> list[Judgement]:
    """Judge every (question, answer); a judge with ``ajudge`` (the llm judge) sees both."""
    ask = getattr(judge, "ajudge", None)
    if ask is None:
        return [judge.judge(text) for _, text in pairs]
    return list(await asyncio.gather(*(ask(q, a) for q, a in pairs)))


def _outcome(
    prompt: CalibrationPrompt, text: str, verdict: Judgement, keep: bool
) -> JudgedResponse:
    return JudgedResponse(
        id=prompt.id,
        category=prompt.category,
        expect=prompt.expect,
        refused=verdict.refused,
        p_refusal=verdict.p_refusal,
        detail=verdict.detail,
        response_sha256=response_digest(text),
        response=text if keep else None,
    )


def run_calibration(
    cset: CalibrationSet,
    runner: Runner,
    judge: Judge | None = None,
    *,
    cache: ResponseCache | str | Path | None = None,
    fresh: bool = False,
    include_responses: bool = False,
    progress: bool | Console = False,
) -> CalibrationRun:
    """Synchronous :func:`arun_calibration` (runs its own event loop)."""
    return asyncio.run(
        arun_calibration(
            cset,
            runner,
            judge,
            cache=cache,
            fresh=fresh,
            include_responses=include_responses,
            progress=progress,
        )
    )
