"""The store interface behind a journal, and what every store shares (DESIGN.md §3).

A store keeps four things: the entries (bytes, leaf hash and index columns), the hashes of the
perfect subtrees above the leaves keyed by ``(level, index)`` (written on append, so a proof reads
O(log n) nodes), the head size, and the signed checkpoints. Appends lock the head, extend the tree
from the stored frontier and commit entries, nodes and head in one transaction: gapless,
race-free, durable.
"""

from __future__ import annotations

import abc
import hashlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from refusalkit.journal._records import EntryRow
from refusalkit.journal._tree import Node

__all__ = ["JOURNAL_FORMAT", "Query", "Store", "node_key", "plan_nodes"]

JOURNAL_FORMAT = "refusalkit.journal/v1"
_LEVEL_SHIFT = 48  # node key = level << 48 | index: one integer primary key, ordered by level
CHUNK = 4096


def node_key(level: int, index: int) -> int:
    """The integer key of node ``(level, index)``."""
    return (level << _LEVEL_SHIFT) | index


def key_node(key: int) -> Node:
    """The ``(level, index)`` of an integer node key."""
    return key >> _LEVEL_SHIFT, key & ((1 << _LEVEL_SHIFT) - 1)


def level_bounds(level: int) -> tuple[int, int]:
    """The key range ``[lo, hi)`` of one tree level."""
    return node_key(level, 0), node_key(level + 1, 0)


def plan_nodes(
    size: int, frontier: Sequence[bytes], leaves: Sequence[bytes]
) -> list[tuple[int, bytes]]:
    """The ``(key, hash)`` rows completed by appending ``leaves`` to a tree of ``size`` leaves.

    ``frontier`` holds the hashes of ``frontier_nodes(size)`` (largest first). Leaves (level 0)
    are not in the rows: stores keep them with their entries. The leaf at position ``pos``
    completes one node per trailing 1 bit of ``pos`` (RFC 9162 §2.1.1 structure).
    """
    stack, rows, sha256 = list(frontier), [], hashlib.sha256
    for pos, leaf in enumerate(leaves, start=size):
        digest, level, rest = leaf, 0, pos
        while rest & 1:
            digest = sha256(b"\x01" + stack.pop() + digest).digest()
            level += 1
            rest >>= 1
            rows.append(((level << _LEVEL_SHIFT) | rest, digest))
        stack.append(digest)
    return rows


@dataclass(frozen=True, slots=True)
class Query:
    """Filters of ``Journal.query``; ``since``/``until`` are RFC 3339 strings (inclusive)."""

    schema: str | None = None
    action: str | None = None
    reason_code: str | None = None
    matched_rule: str | None = None
    agent: str | None = None
    session: str | None = None
    since: str | None = None
    until: str | None = None

    def where(self, mark: str) -> tuple[str, list[Any]]:
        """A SQL condition (``mark`` is the parameter placeholder) and its parameters."""
        clauses, params = [], []
        for column in ("schema", "action", "reason_code", "matched_rule", "agent", "session"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{column} = {mark}")
                params.append(value)
        if self.since is not None:
            clauses.append(f"at >= {mark}")
            params.append(self.since)
        if self.until is not None:
            clauses.append(f"at <= {mark}")
            params.append(self.until)
        return " AND ".join(clauses) or "TRUE", params


class Store(abc.ABC):
    """One journal's persistent state. Thread-safe: every call holds the store's lock."""

    location: str
    kind: str

    def __init__(self) -> None:
        self._lock = threading.RLock()

    @abc.abstractmethod
    def meta(self) -> dict[str, str]:
        """The journal's metadata (format, origin, keys)."""

    @abc.abstractmethod
    def set_meta(self, key: str, value: str, *, replace: bool = True) -> str:
        """Set one metadata value (only if unset, without ``replace``); returns the stored value."""

    @abc.abstractmethod
    def size(self) -> int:
        """The head size: how many entries the tree holds."""

    @abc.abstractmethod
    def append(self, rows: Sequence[EntryRow]) -> int:
        """Append entries durably in one transaction; returns the index of the first."""

    @abc.abstractmethod
    def nodes(self, wanted: Sequence[Node]) -> dict[Node, bytes]:
        """The stored hashes of the given perfect subtrees (missing ones are left out)."""

    @abc.abstractmethod
    def snapshot(self) -> tuple[int, dict[Node, bytes]]:
        """The head size and its frontier nodes, read consistently."""

    @abc.abstractmethod
    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        """Stored ``(index, bytes)`` rows with ``start <= index < end``, in index order."""

    @abc.abstractmethod
    def entries_page(self, start: int, limit: int) -> list[tuple[int, bytes]]:
        """At most ``limit`` stored ``(index, bytes)`` rows with index >= ``start``, in order."""

    @abc.abstractmethod
    def level(self, level: int, start: int, limit: int) -> list[tuple[int, bytes]]:
        """Stored ``(index, hash)`` nodes of one level from ``start``, at most ``limit``."""

    @abc.abstractmethod
    def entry_count(self) -> tuple[int, int]:
        """How many entry rows there are, and the largest index (-1 when none)."""

    @abc.abstractmethod
    def add_checkpoint(self, size: int, note: str) -> None:
        """Store a signed checkpoint."""

    @abc.abstractmethod
    def checkpoints(self) -> list[tuple[int, str]]:
        """Every stored checkpoint as ``(size, note)``, oldest first."""

    @abc.abstractmethod
    def latest_checkpoint(self) -> tuple[int, str] | None:
        """The most recent checkpoint, if any."""

    @abc.abstractmethod
    def select(self, query: Query, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Entries matching ``query`` with index > ``after``, in index order, at most ``limit``."""

    @abc.abstractmethod
    def counts(self, query: Query, column: str) -> dict[str, int]:
        """Entries matching ``query`` counted by one index column (None counted as "-")."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection."""

    def iter_entries(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Stored entry rows with ``start <= index < stop``, in index order, read in chunks."""
        while True:
            rows = self.entries_page(start, CHUNK)
            if not rows:
                return
            for row in rows:
                if stop is not None and row[0] >= stop:
                    return
                yield row
            start = rows[-1][0] + 1

    def iter_level(self, level: int) -> Iterator[tuple[int, bytes]]:
        """Every stored node of one level, in index order, read in chunks."""
        start = 0
        while True:
            rows = self.level(level, start, CHUNK)
            if not rows:
                return
            yield from rows
            start = rows[-1][0] + 1
