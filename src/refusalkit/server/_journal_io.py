"""The service's access to the journal: group-committed appends and off-loop reads.

Appends from concurrent requests are gathered while the previous append is being written and go
to the store as one ``Journal.append`` (one transaction): group commit. Each request is answered
only after the append holding its records has returned, i.e. is durable (DESIGN.md §3).

Each ``Journal`` is opened, used and closed on its own single thread, so a store connection never
crosses threads. On PostgreSQL, reads use a second connection, so a long query does not hold up
appends. On SQLite a process keeps ONE connection: opening the same database file twice in one
process can drop the POSIX locks SQLite relies on (sqlite.org/howtocorrupt.html §2.2), after which
another process may check the WAL back and lose acknowledged appends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from refusalkit.journal import Journal, open_journal
from refusalkit.keyring import Keyring

__all__ = ["JournalAccess"]

T = TypeVar("T")
_Pending = tuple[Sequence[Mapping[str, Any]], "asyncio.Future[list[int]]"]


def _is_postgres(store: str) -> bool:
    return store.startswith(("postgresql://", "postgres://"))


class _Lane:
    """One journal connection on one thread."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"journal-{name}")
        self.journal: Journal | None = None

    async def run(self, fn: Callable[[Journal], T]) -> T:
        journal = self.journal
        if journal is None:
            raise RuntimeError("the journal is not open")
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, journal)

    async def open(self, store: str, keyring: Keyring, origin: str | None) -> None:
        loop = asyncio.get_running_loop()
        self.journal = await loop.run_in_executor(
            self._pool, lambda: open_journal(store, keyring, origin=origin)
        )

    async def close(self) -> None:
        journal, self.journal = self.journal, None
        if journal is not None:
            await asyncio.get_running_loop().run_in_executor(self._pool, journal.close)
        self._pool.shutdown(wait=True)


class JournalAccess:
    """Group-committing writer plus a reader, over one store."""

    def __init__(self, store: str, keyring: Keyring, *, origin: str | None, max_group: int) -> None:
        self.store, self._keyring, self._origin = store, keyring, origin
        self._max_group = max_group
        self._writer = _Lane("writer")
        self._reader = _Lane("reader") if _is_postgres(store) else self._writer
        self._pending: list[_Pending] = []
        self._flushing = False
        self.size_seen = 0

    async def open(self) -> None:
        """Open both connections (creates the store when missing)."""
        await self._writer.open(self.store, self._keyring, self._origin)
        if self._reader is not self._writer:
            await self._reader.open(self.store, self._keyring, self._origin)

    async def close(self) -> None:
        """Close both connections; waits for appends in flight."""
        while self._flushing:
            await asyncio.sleep(0.01)
        await self._writer.close()
        if self._reader is not self._writer:
            await self._reader.close()

    async def append(self, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append ``records``; returns their indices once they are durable."""
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        self._pending.append((records, future))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                group = self._take_group()
                flat = [record for records, _ in group for record in records]
                try:
                    indices = await self._writer.run(lambda j, f=flat: j.append(f))  # type: ignore[misc]
                except Exception as exc:  # noqa: BLE001 (every waiter learns of the failure)
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self._settle(group, indices)
        finally:
            self._flushing = False

    def _take_group(self) -> list[_Pending]:
        group: list[_Pending] = []
        count = 0
        while self._pending and (not group or count + len(self._pending[0][0]) <= self._max_group):
            item = self._pending.pop(0)
            group.append(item)
            count += len(item[0])
        return group

    def _settle(self, group: list[_Pending], indices: list[int]) -> None:
        at = 0
        for records, future in group:
            mine = indices[at : at + len(records)]
            at += len(records)
            if not future.done():
                future.set_result(mine)
        if indices:
            self.size_seen = max(self.size_seen, indices[-1] + 1)

    async def write(self, fn: Callable[[Journal], T]) -> T:
        """Run ``fn`` on the writer's connection (checkpoint signing)."""
        return await self._writer.run(fn)

    async def read(self, fn: Callable[[Journal], T]) -> T:
        """Run ``fn`` on the reader's connection."""
        return await self._reader.run(fn)
