"""Asynchronous access to a journal: group-committed appends and off-loop reads.

Appends from concurrent requests are gathered while the previous append is being written and go
to the store as one ``Journal.append`` (one transaction): group commit. Each request is answered
only after the append holding its records has returned, i.e. is durable (docs/design/journal.md).
The writer thread takes the next group itself as soon as an append returns, so deciding (on the
event loop) and journaling (on the writer) overlap instead of taking turns. An event loop hands
over what one of its turns decided at the end of that turn, as one group; thread callers hand
over each append at once, and the writer, having answered some, waits for them (briefly) to
share the next commit. On SQLite, the writers of several processes take turns through
``WriterTurn`` (see ``_turn``).

A thread caller that waits anyway (the in-process enforcer's, ``append_leading``) needs no
writer thread: the first one to find no commit in progress leads, commits every append queued
and answers the others; appends that arrive meanwhile wait, and the leader, once done, hands
the lead to the first thread among them (which had to be woken anyway), so no append passes
through a thread of its own. A leader waiting for its group to fill (``_gather``) is not woken
to commit it: the thread caller whose append completes the group commits it in its place.

Each ``Journal`` is opened and closed on its own thread, which runs the loop's groups and
``write``; a leading thread caller commits on its own thread, holding ``_using`` as ``write``
does (the store makes each call atomic; ``_using`` keeps a checkpoint's reads and writes from
interleaving with an append). On PostgreSQL, reads use a second connection, so a long query
does not hold up appends. On SQLite, reads share the writer's connection, and the writers run
the WAL checkpoints themselves between groups: one on a second connection would overlap the
appends, but under steady load it never catches up with them, so the WAL never restarts and
grows without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from refusalkit.errors import StoreError
from refusalkit.journal._journal import Journal, open_journal
from refusalkit.journal._turn import WriterTurn, writer_turn
from refusalkit.keyring import Keyring

__all__ = ["Entry", "Handoff", "JournalAccess"]

log = logging.getLogger("refusalkit.journal")

_LEAD: list[int] = []
"""The outcome that promotes a waiting thread caller to leader (``append_leading``): compared by
identity, never an answer (an append of records always has indices)."""

T = TypeVar("T")
Entry = tuple[bytes, tuple[str | None, ...]]
"""An encoded record: its RFC 8785 bytes and index columns (``Journal.append_encoded``)."""


REGROUP_S = 0.0005
"""How long the writer waits for the thread callers it has just answered (``_regroup``)."""


def _is_postgres(store: str) -> bool:
    return store.startswith(("postgresql://", "postgres://"))


class _Lane:
    """One journal connection on one long-lived thread, which runs the jobs queued for it in
    turn (``submit``, ``run``) and sleeps on a condition between them.

    A ``ThreadPoolExecutor(max_workers=1)`` did the same, but its ``submit`` builds a future
    and a work item, checks its thread count through a semaphore and sets the future's result
    (under its own condition) when the job ends, none of which the writer's groups use: a
    group's waiters are answered by ``_answer``. Here a job is a plain callable in a deque.
    The thread is a daemon, so a lane never closed cannot keep the interpreter from exiting
    (nothing it holds then is owed to anyone: an append is answered only once durable).
    """

    def __init__(self, name: str) -> None:
        self._name = f"journal-{name}"
        self._jobs: deque[Callable[[], object]] = deque()
        self._ready = threading.Condition(threading.Lock())  # guards _jobs and _stopping
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.journal: Journal | None = None

    def _serve(self) -> None:
        """The lane's thread: run the jobs in order until the lane stops and none is left."""
        jobs, ready = self._jobs, self._ready
        while True:
            with ready:
                while not jobs:
                    if self._stopping:
                        return
                    ready.wait()
                job = jobs.popleft()
            with contextlib.suppress(BaseException):  # as an executor's ignored future would
                job()
            del job  # drop what it holds before sleeping

    def _queue(self, job: Callable[[], object]) -> None:
        """Hand ``job`` to the lane's thread; ``RuntimeError`` once the lane has stopped."""
        with self._ready:
            if self._stopping or self._thread is None:
                raise RuntimeError("the journal's thread has stopped")
            self._jobs.append(job)
            self._ready.notify()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
            self._thread.start()

    async def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the lane's thread; its outcome, delivered on this loop. A job whose
        caller stopped waiting before it began is skipped, as an executor's cancelled job."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            if future.cancelled():
                return
            try:
                outcome = fn()
            except BaseException as exc:  # noqa: BLE001 (the caller's, raised where it awaits)
                _deliver(loop, future, future.set_exception, exc)
            else:
                _deliver(loop, future, future.set_result, outcome)

        self._queue(job)
        return await future

    async def run(self, fn: Callable[[Journal], T]) -> T:
        journal = self.journal
        if journal is None:
            raise RuntimeError("the journal is not open")
        return await self._call(lambda: fn(journal))

    def submit(self, fn: Callable[[Journal], object]) -> None:
        """Queue ``fn`` on the lane's thread without waiting for it."""
        journal = self.journal
        if journal is None:
            raise RuntimeError("the journal is not open")
        self._queue(lambda: fn(journal))

    async def open(
        self, store: str, keyring: Keyring, origin: str | None, signer_state: Path | None
    ) -> None:
        """Open the journal on the lane's thread; when that fails, the thread ends (nothing can
        ever be queued on a lane with no journal, and its thread holds the lane alive).

        Cancelled while the open runs (a caller's own bound, a shutdown), the open is left to
        finish, shielded, and what it opened is closed on the lane's thread before it ends: the
        store's connection and files are not left open to whoever collects the garbage. The
        open's future is no task, so a loop's shutdown cancelling every task leaves it be."""
        self._start()
        opening: asyncio.Future[Journal] = asyncio.get_running_loop().create_future()
        self._queue(
            lambda: self._open_job(
                opening,
                lambda: open_journal(store, keyring, origin=origin, signer_state=signer_state),
            )
        )
        try:
            self.journal = await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(self._close_late)
            raise
        except BaseException:
            self._stop()
            raise

    def _open_job(self, opening: asyncio.Future[Journal], fn: Callable[[], Journal]) -> None:
        """The lane's thread: ``fn``'s journal (or failure) handed to ``opening``'s loop. When
        that loop has closed, no callback will ever run there: the journal is closed here and
        the thread ends (else it waited for ever, holding the journal)."""
        loop = opening.get_loop()
        try:
            journal = fn()
        except BaseException as exc:  # noqa: BLE001 (the opener's, raised where it awaits)
            if not _deliver(loop, opening, opening.set_exception, exc):
                self._stop()
            return
        if not _deliver(loop, opening, opening.set_result, journal):
            try:
                journal.close()
            finally:
                self._stop()

    def _close_late(self, opening: asyncio.Future[Journal]) -> None:
        """On the loop, once an open whose caller was cancelled has ended: close the journal
        it opened (queued before the lane stops), then end the thread."""
        if not opening.cancelled() and opening.exception() is None:
            with contextlib.suppress(RuntimeError):  # stopped already: nothing more runs there
                self._queue(opening.result().close)
        self._stop()

    async def close(self) -> None:
        """Close the journal on the lane's thread, then end the thread (also when the close
        failed: nothing more can run on a closed journal)."""
        journal, self.journal = self.journal, None
        try:
            if journal is not None:
                await self._call(journal.close)
        finally:
            self._stop()
            if self._thread is not None:
                self._thread.join()

    def _stop(self) -> None:
        """Let the lane's thread end once the jobs queued before are done; none is taken after."""
        with self._ready:
            self._stopping = True
            self._ready.notify()


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    setter: Callable[[Any], None],
    value: object,
) -> bool:
    """From a lane's thread: ``setter(value)`` on ``future``'s loop, unless its waiter gave
    up (the future is done: cancelled); False when the loop is closed (no one waits there)."""

    def settle() -> None:
        if not future.done():
            setter(value)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:
        return False
    return True


class JournalAccess:
    """Group-committing writer plus a reader, over one store."""

    def __init__(
        self,
        store: str,
        keyring: Keyring,
        *,
        origin: str | None,
        max_group: int,
        signer_state: Path | None = None,
        lock_wait_s: float | None = None,
    ) -> None:
        self.store, self._keyring, self._origin = store, keyring, origin
        self._lock_wait_s = lock_wait_s  # bounds a commit's wait for another writer's lock
        self._signer_state = signer_state
        self._max_group = max_group
        self._writer = _Lane("writer")
        self._reader = _Lane("reader") if _is_postgres(store) else self._writer
        self._lock = threading.Lock()  # guards _pending, _staged and _flushing (all threads)
        self._pending: deque[_Pending] = deque()
        self._flushing = False
        self._arrived = threading.Condition(self._lock)  # a thread's append, for ``_regroup``
        self._regrouping = 0  # how many pending appends ``_regroup`` waits for (0: none)
        self._regroup_missed = False
        self._led = 0  # thread callers in the last leader's group (``_gather``)
        self._gatherer: Handoff | None = None  # a leader waiting for its group (``_gather``)
        self._gather_wanted = 0  # how many pending appends complete that leader's group
        # each loop's appends of its current turn, published at the turn's end (``_publish``)
        self._staged: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
        self._turn: WriterTurn | contextlib.nullcontext[None] = contextlib.nullcontext()
        self._using = threading.Lock()  # the writer's connection, between a leader and ``write``
        self.size_seen = 0

    async def open(self) -> None:
        """Open both connections (creates the store when missing). When a step after the
        writer's open fails, what was opened is closed again: no caller closes an access whose
        open failed, and a lane's thread holds its journal alive."""
        await self._writer.open(self.store, self._keyring, self._origin, self._signer_state)
        try:
            if self._lock_wait_s is not None:
                wait_s = self._lock_wait_s
                await self._writer.run(lambda journal: journal.bound_lock_wait(wait_s))
            self._turn = writer_turn(
                self.store, is_postgres=_is_postgres(self.store), wait_s=self._lock_wait_s
            )
            if self._reader is not self._writer:
                await self._reader.open(self.store, self._keyring, self._origin, self._signer_state)
        except BaseException:
            await self._writer.close()
            if isinstance(self._turn, WriterTurn):
                self._turn.close()
            raise

    async def close(self) -> None:
        """Close both connections; waits for appends in flight, staged ones included (a loop
        that stopped before the end of its turn never publishes its own)."""
        self._publish(None)
        while self._flushing:
            await asyncio.sleep(0.01)
        await self._writer.close()
        if self._reader is not self._writer:
            await self._reader.close()
        if isinstance(self._turn, WriterTurn):
            self._turn.close()

    async def append(self, records: Sequence[Entry]) -> list[int]:
        """Append encoded ``records``; returns their indices once they are durable.

        What one turn of the loop decides goes to the writer together, at the end of that turn
        (``_publish``): handed over one by one, the writer, taking the next group the moment an
        append returns, took the turn's first decision alone as soon as it could get the GIL,
        and with a disk that syncs in well under a millisecond most groups held one decision,
        each paying a whole commit (measured in-process at 128 connections: 1,058 of 1,330
        groups). The writer never waits for the loop: what earlier turns published is taken
        the moment an append returns.
        """
        loop = asyncio.get_running_loop()
        waiter = _LoopWaiter(loop)
        with self._lock:
            staged = self._staged.get(loop)
            first = staged is None
            if staged is None:
                staged = self._staged[loop] = []
            staged.append((records, waiter))
        if first:
            loop.call_soon(self._publish, loop)
        return await waiter.future

    def _publish(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """On ``loop``, after the turn's callbacks: hand its appends to the writer (every loop's,
        for ``None``)."""
        with self._lock:
            published: list[_Pending] = []
            for staged in [*self._staged] if loop is None else [loop]:
                published.extend(self._staged.pop(staged, ()))
            start = self._add_pending(published)
        if not start:
            return
        try:
            self._writer.submit(self._drain)
        except RuntimeError as exc:  # closed: nothing was started; the waiters learn of it
            with self._lock:
                dropped, self._flushing = list(self._pending), False
                self._pending.clear()
            _answer([(waiter, exc) for _, waiter in dropped])

    def append_from_thread(self, records: Sequence[Entry]) -> Handoff:
        """``append`` for a caller on a plain thread: the returned ``Handoff`` is settled by the
        writer thread itself, with no event loop between them (the in-process enforcer's
        callers)."""
        handoff = Handoff()
        with self._lock:
            start = self._add_pending([(records, handoff)])
        if start:
            try:
                self._writer.submit(self._drain)
            except RuntimeError:  # closed: nothing was started, so nothing else is pending
                with self._lock:
                    self._pending.clear()
                    self._flushing = False
                raise
        return handoff

    def append_leading(self, records: Sequence[Entry], timeout: float) -> list[int]:
        """``append`` for a caller on a plain thread that waits for the answer: its indices once
        durable. The caller that finds no commit in progress leads: it commits every queued
        append itself (``_lead``), with no hand-off to another thread. A caller arriving during
        a commit waits (at most ``timeout`` seconds: ``TimeoutError``) to be answered, or to be
        made the next leader. Raises the commit's failure for every append of its group.
        """
        handoff = Handoff()
        with self._lock:
            taking = self._take_over()
            lead = self._add_pending([(records, handoff)]) or taking  # none in progress: lead
        while True:
            if not lead:
                outcome = self._follow(handoff, timeout)
                if outcome is not _LEAD:
                    return outcome
                handoff.rearm()
            journal = self._writer.journal
            if journal is None:
                self._fail_pending(RuntimeError("the journal is not open"))
                return handoff.result(0)
            if self._lead(journal, handoff):
                return handoff.result(0)
            lead = False  # its group was taken over while it gathered: answered like the others

    def _take_over(self) -> bool:
        """With the lock held, a thread caller about to queue: whether its append completes the
        group a gathering leader waits for (``_gather``), and so it leads in that one's place.

        The caller that completes a group is running already: it commits at once, and the
        gathering leader, whose append is in that group, is answered like the other callers.
        Waking the gatherer instead, the completing caller went to sleep only to be woken by
        the commit, and the commit waited for the gatherer's own wake-up: one thread more to
        wake a group, and a condition variable's wait and notification besides.
        """
        if self._gatherer is None or len(self._pending) + 1 < self._gather_wanted:
            return False
        self._gatherer = None
        return True

    def _follow(self, handoff: Handoff, timeout: float) -> list[int]:
        """A follower's wait: its indices, or ``_LEAD`` once made the leader. On a timeout the
        handoff is marked given up, under the lock that a promotion takes, so the lead is never
        handed to a caller that has gone."""
        try:
            return handoff.result(timeout)
        except TimeoutError:
            with self._lock:
                if not handoff.settled():
                    handoff.given_up = True
                    raise
            return handoff.result()  # answered (or promoted) just as the wait ran out: at once

    def _lead(self, journal: Journal, mine: Handoff) -> bool:
        """A leading thread: commit group after group until its own append is answered, then
        hand the lead on (``_pass_lead``); False, with nothing committed, when a caller took
        the lead over while it gathered (``_take_over``). Never raises: failures go to the
        group's waiters."""
        taken_over = False
        try:
            while not mine.settled():
                with self._lock:
                    taken_over = not self._gather(mine)
                    if taken_over:  # the new leader hands the lead on, not this thread
                        return False
                    group = self._take_group()
                if not group:  # pragma: no cover (its own append is pending until answered)
                    break
                with self._using:
                    indices = self._commit(journal, group)
                    self._maintain(journal)
                self._led = sum(type(waiter) is Handoff for _, waiter in group)
                if isinstance(indices, Exception):
                    _answer([(waiter, indices) for _, waiter in group])
                else:
                    self._settle(group, indices)
        finally:  # whatever happened, the appends that came meanwhile get a leader
            if not taken_over:
                self._pass_lead()
        return True

    def _gather(self, mine: Handoff) -> bool:
        """With the lock held, a leader about to take its group: wait (at most ``REGROUP_S``)
        for as many thread callers as the last leader's group held, so that callers in step
        share one commit; False when the caller that completed the group took the lead over
        (``_take_over``) and commits it, this leader's append with it.

        Without it, the callers just answered came back one by one: the first found no commit
        in progress and committed alone while the others queued behind it, so 8 callers made
        commits of 1 and of 7-8 in turn (measured). A wait that runs out (the callers went on
        to other work) is not repeated for the next group. The leader waits on its own
        handoff, which an event loop's appends completing the group wake (``_add_pending``)
        and the new leader's commit answers.
        """
        wanted = self._led
        if wanted <= len(self._pending) or self._regroup_missed:
            self._regroup_missed = False
            return True
        self._gatherer, self._gather_wanted = mine, wanted
        self._lock.release()
        try:
            mine.wait(REGROUP_S)
        finally:
            self._lock.acquire()
        if mine.promoted():  # woken to commit now (the group is complete), or made leader
            mine.rearm()
            return True
        if self._gatherer is not mine:
            return False
        self._gatherer = None
        self._regroup_missed = len(self._pending) < wanted
        return True

    def _pass_lead(self) -> None:
        """After a leader's commits: the first waiting thread caller among the pending appends
        leads next; with none (only loops' appends), the writer thread drains them; with nothing
        pending, no commit is in progress."""
        with self._lock:
            if not self._pending:
                self._flushing = False
                return
            for _, waiter in self._pending:
                if type(waiter) is Handoff and not waiter.given_up:
                    waiter.settle(_LEAD)
                    return
        try:
            self._writer.submit(self._drain)
        except RuntimeError as exc:  # closed: no one else will write them
            self._fail_pending(exc)

    def _fail_pending(self, exc: Exception) -> None:
        """Answer every pending append with ``exc``; no commit is in progress after."""
        with self._lock:
            dropped, self._flushing = list(self._pending), False
            self._pending.clear()
        _answer([(waiter, exc) for _, waiter in dropped])

    def _add_pending(self, appends: Sequence[_Pending]) -> bool:
        """With the lock held: queue ``appends`` for the writer, wake a ``_regroup`` (or a
        leader's ``_gather``) waiting for them, and say whether a commit must be started (none
        is in progress: the writer is not draining, no thread is leading)."""
        self._pending.extend(appends)
        if 0 < self._regrouping <= len(self._pending):
            self._arrived.notify()
        gatherer = self._gatherer
        if gatherer is not None and self._gather_wanted <= len(self._pending):
            self._gatherer = None  # a loop's appends completed a gathering leader's group
            gatherer.settle(_LEAD)
        start = bool(self._pending) and not self._flushing
        self._flushing = self._flushing or start
        return start

    def _drain(self, journal: Journal) -> None:
        """Writer thread: append whatever is pending, group after group, until nothing is.

        The next group is taken here, the moment the previous append returns (after thread
        callers were answered, once they are back: ``_regroup``), not on an event loop: while
        one group is being made durable the callers go on deciding the next requests, and a
        group never waits for a loop to get round to starting it.
        """
        while True:
            with self._lock:
                group = self._take_group()
                if not group:
                    self._flushing = False
                    return
            indices = self._commit(journal, group)
            with self._lock:
                waiting = len(self._pending)  # arrived during the commit, before the answers
            if isinstance(indices, Exception):
                _answer([(waiter, indices) for _, waiter in group])
            else:
                self._settle(group, indices)
            self._maintain(journal)
            self._regroup(sum(type(waiter) is Handoff for _, waiter in group), waiting)

    @staticmethod
    def _maintain(journal: Journal) -> None:
        """Writer thread: housekeeping (SQLite's WAL checkpoint) between groups, after the
        answers, never inside a commit. A failed checkpoint only leaves the WAL longer, so any
        error is logged and the writer goes on: were it to escape, ``_drain`` would end with
        ``_flushing`` still set, and every later append would wait out its bound and fail."""
        try:
            journal.maintain()
        except StoreError:  # the store's own refusal: expected now and then, kept quiet
            pass
        except Exception as exc:  # noqa: BLE001 (the appends are answered; only the WAL grows)
            log.warning("journal housekeeping failed (%s); the WAL stays longer", exc)

    def _commit(self, journal: Journal, group: list[_Pending]) -> list[int] | Exception:
        """Writer thread: append ``group`` in one transaction; its indices, or the failure
        (which every waiter of the group then learns)."""
        flat = [record for records, _ in group for record in records]
        try:
            with self._turn:
                return journal.append_encoded(flat)
        except Exception as exc:  # noqa: BLE001 (handed to the waiters, not raised here)
            return exc

    def _regroup(self, answered: int, waiting: int) -> None:
        """Writer thread: give the ``answered`` thread callers a moment (at most ``REGROUP_S``)
        to hand in their next decisions, so that they share the next commit with the
        ``waiting`` appends that came during the last one.

        Taking the next group at once, the writer took the first callers back while the others
        were still waking: 8 thread callers made groups of 1 to 8, 3.3 on average on a disk
        (measured). The callers just answered are not held up by the wait; the ``waiting``
        ones are, by the others' time to decide. A wait that runs out (the callers went on to
        other work) is not repeated for the next group.
        """
        if answered == 0 or self._regroup_missed:
            self._regroup_missed = False
            return
        wanted = waiting + answered
        with self._lock:  # an append that arrives wakes the wait (``_add_pending``)
            self._regrouping = wanted
            arrived = self._arrived.wait_for(lambda: len(self._pending) >= wanted, REGROUP_S)
            self._regrouping = 0
            self._regroup_missed = not arrived

    def _take_group(self) -> list[_Pending]:
        group: list[_Pending] = []
        count = 0
        pending = self._pending
        while pending and (not group or count + len(pending[0][0]) <= self._max_group):
            item = pending.popleft()
            group.append(item)
            count += len(item[0])
        return group

    def _settle(self, group: list[_Pending], indices: list[int]) -> None:
        at, answers = 0, []
        for records, waiter in group:
            answers.append((waiter, indices[at : at + len(records)]))
            at += len(records)
        _answer(answers)
        if indices:
            self.size_seen = max(self.size_seen, indices[-1] + 1)

    async def write(self, fn: Callable[[Journal], T]) -> T:
        """Run ``fn`` on the writer's connection (checkpoint signing), never during a leading
        thread's commit."""

        def using(journal: Journal) -> T:
            with self._using:
                return fn(journal)

        return await self._writer.run(using)

    async def read(self, fn: Callable[[Journal], T]) -> T:
        """Run ``fn`` on the reader's connection."""
        return await self._reader.run(fn)


class Handoff:
    """One thread's wait for its append: a lock taken at birth and released by the writer.

    A ``concurrent.futures.Future`` would do, but its condition variable, waiter list and
    callbacks cost a thread caller more CPU than deciding does; a bare lock is one futex wait.
    """

    __slots__ = ("_done", "_outcome", "given_up")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._outcome: list[int] | Exception | None = None
        self.given_up = False  # its caller stopped waiting: never made a leader

    def settled(self) -> bool:
        """Whether the answer is in."""
        return self._outcome is not None

    def promoted(self) -> bool:
        """Whether the outcome in is the lead (``JournalAccess.append_leading``), not an answer."""
        return self._outcome is _LEAD

    def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for an outcome, leaving it unread; whether one came."""
        if not self._done.acquire(timeout=timeout):
            return False
        self._done.release()
        return True

    def rearm(self) -> None:
        """After the lead was handed over (``JournalAccess.append_leading``): wait again, for
        the answer proper."""
        self._done.acquire()
        self._outcome = None

    def settle(self, outcome: list[int] | Exception) -> None:
        """The writer's answer: the indices, or the failure (called once per arming)."""
        self._outcome = outcome
        self._done.release()

    def result(self, timeout: float | None = None) -> list[int]:
        """The indices once durable; raises the append's failure, or ``TimeoutError`` when no
        answer came within ``timeout`` seconds (the answer that comes later is dropped)."""
        if not self._done.acquire(timeout=-1 if timeout is None else timeout):
            raise TimeoutError("the journal did not answer in time")
        self._done.release()  # a second ``result`` sees the same answer
        outcome = self._outcome
        if isinstance(outcome, Exception):
            raise outcome
        assert outcome is not None
        return outcome


class _LoopWaiter:
    """One coroutine's wait for its append: a future of its event loop."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[list[int]] = loop.create_future()


_Waiter = Handoff | _LoopWaiter
_Pending = tuple[Sequence[Entry], _Waiter]


def _answer(answers: Sequence[tuple[_Waiter, list[int] | Exception]]) -> None:
    """Writer thread: hand each append's outcome to its waiter. A thread's handoff is settled
    here; a group's coroutines are settled by one callback on each of their loops (one wake-up
    of that loop per group, not one per request)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[list[int]], Any]]] = {}
    for waiter, outcome in answers:
        if type(waiter) is Handoff:
            waiter.settle(outcome)
        else:
            assert isinstance(waiter, _LoopWaiter)
            by_loop.setdefault(waiter.loop, []).append((waiter.future, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits there now
            loop.call_soon_threadsafe(_resolve_all, settled)


def _resolve_all(settled: list[tuple[asyncio.Future[list[int]], list[int] | Exception]]) -> None:
    """On a waiter's loop: settle each future unless its waiter gave up on it (a timeout)."""
    for future, outcome in settled:
        if future.done():
            continue
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
