"""The store interface behind a journal, and what every store shares (docs/design/journal.md).

A store keeps three things: one row per entry, the head size, and the signed checkpoints. An entry
row holds the entry's bytes, its RFC 9162 leaf hash, its index columns, and the hashes of the
perfect subtrees that this leaf completes (a leaf at position ``p`` completes one node per trailing
1 bit of ``p``, so one node per entry on average; node ``(level, index)`` lives in the row of its
last leaf, ``node_row``). So every node of the tree is stored, a proof reads O(log n) rows, and an
append writes nothing but its entry rows and the head: no separate node table to grow in the
middle. Appends lock the head, extend the tree from the frontier and commit entries and head in
one transaction: gapless, race-free, durable.
"""

from __future__ import annotations

import abc
import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from refusalkit.errors import StoreError
from refusalkit.journal._records import FIELDS, EntryRow
from refusalkit.journal._tree import HASH_SIZE, Node, frontier_nodes

__all__ = [
    "CHECKPOINT_TALLY_KEY",
    "CLAIM_TABLE",
    "INCREMENT_CHECKPOINT_TALLY_SQL",
    "JOURNAL_FORMAT",
    "TABLES",
    "FrontierCache",
    "IndexedRow",
    "Query",
    "Store",
    "StoredRow",
    "node_row",
    "pick_nodes",
    "plan_append",
    "plan_nodes",
]

JOURNAL_FORMAT = "refusalkit.journal/v1"
CHECKPOINT_TALLY_KEY = "checkpoints"
"""Metadata key counting every checkpoint ever stored, updated in the checkpoint's transaction,
so that ``verify`` notices deleted checkpoints (docs/design/journal.md, tamper evidence)."""
CHUNK = 4096
INCREMENT_CHECKPOINT_TALLY_SQL = (
    "INSERT INTO journal_meta (key, value) "  # noqa: S608 (a constant)
    f"SELECT '{CHECKPOINT_TALLY_KEY}', CAST(count(*) AS TEXT) "
    "FROM journal_checkpoint WHERE TRUE ON CONFLICT (key) "
    "DO UPDATE SET value = CAST(CAST(journal_meta.value AS bigint) + 1 AS TEXT)"
)
"""Run right after inserting a checkpoint, in its transaction: add one to the count (a journal
from before the count existed starts it at its number of checkpoint rows)."""
TABLES = ("journal_meta", "journal_head", "journal_entry", "journal_checkpoint")
CLAIM_TABLE = "journal_claim"
"""One-time claims made with an append (``append_claiming``): ``claim`` (primary key) and the
index of the first entry appended with it. An enforcement index, not evidence: the entries
themselves say what was claimed (docs/design/approvals.md); journals from before it have none."""

StoredRow = tuple[int, bytes, bytes | None, bytes | None]
"""``(index, entry bytes, stored leaf hash, stored node hashes)`` of one entry row."""
IndexedRow = tuple[Any, ...]
"""A ``StoredRow`` followed by the row's stored index columns, one per ``FIELDS``."""
_Row = TypeVar("_Row", bound=tuple[Any, ...])


def node_row(level: int, index: int) -> int:
    """The entry index whose row stores node ``(level, index)``: the node's last leaf."""
    return ((index + 1) << level) - 1


def plan_nodes(size: int, frontier: Sequence[bytes], leaves: Sequence[bytes]) -> list[bytes | None]:
    """For each of ``leaves`` appended to a tree of ``size`` leaves, the hashes of the nodes it
    completes, levels 1 and up, concatenated (None when it completes none).

    ``frontier`` holds the hashes of ``frontier_nodes(size)`` (largest first). RFC 9162 §2.1.1:
    the leaf at position ``pos`` completes one node per trailing 1 bit of ``pos``.
    """
    return plan_append(size, frontier, leaves)[0]


def plan_append(
    size: int, frontier: Sequence[bytes], leaves: Sequence[bytes]
) -> tuple[list[bytes | None], list[bytes]]:
    """``plan_nodes`` plus the frontier hashes of the grown tree (``frontier_nodes(size + n)``)."""
    stack, sha256 = list(frontier), hashlib.sha256
    out: list[bytes | None] = []
    for position, leaf in enumerate(leaves, start=size):
        if not position & 1:
            stack.append(leaf)
            out.append(None)
            continue
        digest, made, rest = leaf, [], position
        while rest & 1:
            digest = sha256(b"\x01" + stack.pop() + digest).digest()
            made.append(digest)
            rest >>= 1
        stack.append(digest)
        out.append(b"".join(made))
    return out, stack


class FrontierCache:
    """The right frontier of the tree as of the last append this store committed.

    Saves reading O(log n) rows per append. Only trusted for the head size it was made for: an
    append reads the head size inside its write transaction (holding the write lock) and reloads
    the frontier when another writer moved the head. Dropped whenever a write fails. The size and
    hashes are one tuple, replaced whole; callers hold the store's lock.
    """

    __slots__ = ("_state",)

    def __init__(self) -> None:
        self._state: tuple[int, list[bytes]] = (-1, [])

    @property
    def size(self) -> int:
        """The head size the cached frontier is for (-1: nothing cached)."""
        return self._state[0]

    @property
    def hashes(self) -> list[bytes]:
        """The cached frontier hashes, largest subtree first."""
        return self._state[1]

    def get(
        self, size: int, load: Callable[[Sequence[Node]], Mapping[Node, bytes]], where: str
    ) -> list[bytes]:
        """The frontier hashes for ``size``, cached or loaded with ``load`` (StoreError if gone)."""
        cached, hashes = self._state
        if size == cached:
            return hashes
        self.clear()
        wanted = frontier_nodes(size)
        have = load(wanted)
        if len(have) != len(wanted):
            raise StoreError(f"journal {where} is corrupt: tree nodes are missing")
        return [have[n] for n in wanted]

    def set(self, size: int, hashes: list[bytes]) -> None:
        """Remember the frontier of a committed tree of ``size`` leaves."""
        self._state = (size, hashes)

    def clear(self) -> None:
        """Forget the frontier (after a failed write)."""
        self._state = (-1, [])


def pick_nodes(
    wanted: Sequence[Node], rows: Mapping[int, tuple[bytes | None, bytes | None]]
) -> dict[Node, bytes]:
    """The hashes of ``wanted`` nodes out of entry rows ``{index: (leaf, node hashes)}`` read at
    ``node_row`` of each; a node whose hash is not there is left out."""
    found: dict[Node, bytes] = {}
    for level, index in wanted:
        row = rows.get(node_row(level, index))
        if row is None:
            continue
        digest = row[0] if level == 0 else (row[1] or b"")[(level - 1) * HASH_SIZE :][:HASH_SIZE]
        if digest is not None and len(digest) == HASH_SIZE:
            found[level, index] = bytes(digest)
    return found


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
    """One journal's persistent state. Thread-safe: every call holds the store's lock.

    The reads are the same SQL on every backend and live here; a backend supplies ``_all`` (one
    read statement), its parameter ``mark``, and the writes, which need its own locking.
    """

    location: str
    kind: str
    mark: str = "?"

    def __init__(self) -> None:
        self._lock = threading.RLock()

    @abc.abstractmethod
    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run one read statement written with ``?`` placeholders; all its rows."""

    def _sql(self, sql: str) -> str:
        """``sql`` with this backend's placeholder for ``?``."""
        return sql if self.mark == "?" else sql.replace("?", self.mark)

    def meta(self) -> dict[str, str]:
        """The journal's metadata (format, origin, keys, checkpoint count)."""
        return {str(k): str(v) for k, v in self._all("SELECT key, value FROM journal_meta")}

    @abc.abstractmethod
    def set_meta(self, key: str, value: str, *, replace: bool = True) -> str:
        """Set one metadata value (only if unset, without ``replace``); returns the stored value."""

    def size(self) -> int:
        """The head size: how many entries the tree holds."""
        return int(self._all("SELECT size FROM journal_head WHERE id = 1")[0][0])

    @abc.abstractmethod
    def append(self, rows: Sequence[EntryRow]) -> int:
        """Append entries durably in one transaction; returns the index of the first."""

    @abc.abstractmethod
    def append_claiming(self, rows: Sequence[EntryRow], claims: Sequence[str]) -> int:
        """Append entries and record ``claims`` in ONE transaction, or nothing at all: when a
        claim is already recorded, ``ClaimTakenError`` (naming it) and nothing is appended."""

    @abc.abstractmethod
    def _has_claims(self) -> bool:
        """Whether the store has its claims table yet."""

    def claimed(self, claims: Sequence[str]) -> dict[str, int]:
        """``claim -> index`` of those of ``claims`` already recorded."""
        if not claims or not self._has_claims():
            return {}
        marks = ", ".join("?" for _ in claims)
        sql = f"SELECT claim, idx FROM {CLAIM_TABLE} WHERE claim IN ({marks})"  # noqa: S608
        return {str(c): int(i) for c, i in self._all(self._sql(sql), list(claims))}

    def bound_lock_wait(self, seconds: float) -> None:  # noqa: B027 (a no-op where none is kept)
        """Wait at most ``seconds`` for another writer's lock before an append fails (SQLite:
        the busy timeout); a backend whose waits are bounded elsewhere keeps its own."""

    def maintain(self, *, force: bool = False, slack: int = 1) -> bool:  # noqa: ARG002 (none here)
        """Housekeeping off the append path (SQLite: WAL checkpoints); whether any ran."""
        return False

    @abc.abstractmethod
    def nodes(self, wanted: Sequence[Node]) -> dict[Node, bytes]:
        """The stored hashes of the given perfect subtrees (missing ones are left out)."""

    @abc.abstractmethod
    def snapshot(self) -> tuple[int, dict[Node, bytes]]:
        """The head size and its frontier nodes, read consistently."""

    def entries(self, start: int, end: int) -> list[tuple[int, bytes]]:
        """Stored ``(index, bytes)`` rows with ``start <= index < end``, in index order."""
        sql = self._sql(
            "SELECT idx, data FROM journal_entry WHERE idx >= ? AND idx < ? ORDER BY idx"
        )
        return [(int(i), bytes(d)) for i, d in self._all(sql, (start, end))]

    @abc.abstractmethod
    def entries_page(self, start: int, limit: int) -> list[StoredRow]:
        """At most ``limit`` stored rows with index >= ``start``, in index order."""

    @abc.abstractmethod
    def indexed_page(self, start: int, limit: int) -> list[IndexedRow]:
        """Like ``entries_page``, each row followed by its stored index columns (``FIELDS``)."""

    def entry_count(self) -> tuple[int, int]:
        """How many entry rows there are, and the largest index (-1 when none)."""
        count, top = self._all("SELECT count(*), max(idx) FROM journal_entry")[0]
        return int(count), -1 if top is None else int(top)

    @abc.abstractmethod
    def _write_all(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run write statements, already in this backend's placeholders, in one transaction."""

    def add_checkpoint(self, size: int, note: str) -> None:
        """Store a signed checkpoint and count it (``CHECKPOINT_TALLY_KEY``) in one transaction."""
        insert = self._sql("INSERT INTO journal_checkpoint (size, note) VALUES (?, ?)")
        self._write_all([(insert, (size, note)), (INCREMENT_CHECKPOINT_TALLY_SQL, ())])

    def replace_checkpoint(self, size: int, old: str, new: str) -> None:
        """Replace the stored note ``old`` of ``size`` with ``new`` (the same checkpoint with more
        signature lines, such as witnesses' cosignatures)."""
        update = "UPDATE journal_checkpoint SET note = ? WHERE size = ? AND note = ?"
        self._write_all([(self._sql(update), (new, size, old))])

    def checkpoints(self) -> list[tuple[int, str]]:
        """Every stored checkpoint as ``(size, note)``, oldest first."""
        rows = self._all("SELECT size, note FROM journal_checkpoint ORDER BY seq")
        return [(int(s), str(n)) for s, n in rows]

    def recorded_checkpoints(self) -> int:
        """How many checkpoints were ever stored, as recorded with each one (0 when unknown)."""
        return int(self.meta().get(CHECKPOINT_TALLY_KEY, "0"))

    def latest_checkpoint(self) -> tuple[int, str] | None:
        """The most recent checkpoint, if any."""
        rows = self._all("SELECT size, note FROM journal_checkpoint ORDER BY seq DESC LIMIT 1")
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def select(self, query: Query, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Entries matching ``query`` with index > ``after``, in index order, at most ``limit``."""
        cond, params = query.where("?")
        sql = f"SELECT idx, data FROM journal_entry WHERE idx > ? AND {cond} ORDER BY idx LIMIT ?"  # noqa: S608 (columns are constants; values are parameters)
        return [(int(i), bytes(d)) for i, d in self._all(self._sql(sql), [after, *params, limit])]

    def counts(self, query: Query, column: str) -> dict[str, int]:
        """Entries matching ``query`` counted by one index column (None counted as "-")."""
        if column not in FIELDS:
            raise ValueError(column)
        cond, params = query.where("?")
        sql = f"SELECT {column}, count(*) FROM journal_entry WHERE {cond} GROUP BY {column}"  # noqa: S608 (checked column)
        return {
            str(k) if k is not None else "-": int(n) for k, n in self._all(self._sql(sql), params)
        }

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection."""

    def iter_entries(self, start: int = 0, stop: int | None = None) -> Iterator[StoredRow]:
        """Stored entry rows with ``start <= index < stop``, in index order, read in chunks."""
        return self._iter(self.entries_page, start, stop)

    def iter_indexed(self, start: int = 0, stop: int | None = None) -> Iterator[IndexedRow]:
        """Stored rows with their index columns, ``start <= index < stop``, in index order."""
        return self._iter(self.indexed_page, start, stop)

    @staticmethod
    def _iter(
        page: Callable[[int, int], Sequence[_Row]], start: int, stop: int | None
    ) -> Iterator[_Row]:
        while True:
            rows = page(start, CHUNK)
            if not rows:
                return
            for row in rows:
                if stop is not None and row[0] >= stop:
                    return
                yield row
            start = rows[-1][0] + 1
