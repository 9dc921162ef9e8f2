"""Group-committed journaling for an in-process enforcer (docs/design/journal.md).

Concurrent callers of one ``LocalEnforcer`` (an agent running tools in parallel, from threads or
from async code) hand their decisions to one ``refusalkit.journal.JournalAccess``: the appends
that arrive while the previous one is being made durable go to the store together, as one
transaction. Each caller waits, at most ``wait_s`` seconds, for the append holding its decision to
return, i.e. for a durable acknowledgement, before the decision is given back. A thread caller
that finds no commit in progress commits the queued appends itself and answers the others
(``JournalAccess.append_leading``), so a thread's decision passes through no writer thread;
async callers' appends go to the writer thread at the end of their loop's turn, and both kinds
share the same groups of one log. Opening, closing and approval settling run on an event loop
of its own, on a thread of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from refusalkit.errors import StoreError
from refusalkit.journal import Entry, Journal, JournalAccess
from refusalkit.keyring import Keyring

__all__ = ["GroupJournal"]

T = TypeVar("T")


def _closed() -> StoreError:
    return StoreError("the journal is closed", hint="Open a new enforcer.")


class GroupJournal:
    """A journal store taking appends from many threads and event loops, in groups.

    ``max_group`` bounds the records of one commit; ``wait_s`` bounds each caller's wait for its
    acknowledgement (past it, ``append`` raises ``StoreError`` and the enforcer fails closed).
    """

    def __init__(
        self,
        store: str | Path,
        keyring: Keyring,
        *,
        max_group: int = 1000,
        wait_s: float = 10.0,
        signer_state: Path | None = None,
    ) -> None:
        self.store, self.wait_s = str(store), wait_s
        self._access = JournalAccess(  # a leading caller commits itself: bound its lock wait
            self.store,
            keyring,
            origin=None,
            max_group=max_group,
            signer_state=signer_state,
            lock_wait_s=wait_s,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="refusalkit-journal-loop", daemon=True
        )
        self._thread.start()
        self._closed = False
        try:
            self._call(self._access.open()).result()
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coro.close()
            raise _closed()
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def append(self, entries: Sequence[Entry]) -> list[int]:
        """The entries' indices, once durable; from any thread. The caller that finds no commit
        in progress commits the group itself (``JournalAccess.append_leading``); an answer
        later than ``wait_s``, its own commit's included, is refused like no answer."""
        if self._closed:
            raise _closed()
        started = time.monotonic()
        try:
            indices = self._access.append_leading(entries, self.wait_s)
        except TimeoutError:
            raise self._late() from None
        except RuntimeError:
            raise _closed() from None
        if time.monotonic() - started > self.wait_s:
            raise self._late()
        return indices

    async def aappend(self, entries: Sequence[Entry]) -> list[int]:
        """``append`` from async code on any event loop, without blocking that loop."""
        if self._closed:
            raise _closed()
        try:
            return await asyncio.wait_for(self._access.append(entries), timeout=self.wait_s)
        except RuntimeError:
            raise _closed() from None
        except TimeoutError:
            raise self._late() from None

    def run(self, fn: Callable[[Journal], T]) -> T:
        """``fn`` on the writer's own connection, between groups (approval settling)."""
        try:
            return self._call(self._access.write(fn)).result(timeout=self.wait_s)
        except concurrent.futures.TimeoutError:
            raise self._late() from None

    def _late(self) -> StoreError:
        return StoreError(
            f"the journal did not acknowledge the decision within {self.wait_s:g} s",
            hint="Check the journal's disk or database; the decision was refused.",
        )

    def close(self) -> None:
        """Wait for appends in flight, close the store and stop the loop; idempotent."""
        if self._closed:
            return
        try:
            self._call(self._access.close()).result()
        finally:
            self._closed = True
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
