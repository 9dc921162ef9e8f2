"""Full verification of a log: recompute the RFC 9162 tree from the entries, check every signed
checkpoint against it, and check consistency between successive checkpoints (DESIGN.md §3).

Works from any source of entries, stored nodes and checkpoints (a live store or an exported
bundle). Failures are collected and the one with the smallest entry index is raised, so the
reported ``VerificationError.index`` is the first index from which the log cannot be trusted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from refusalkit.errors import VerificationError
from refusalkit.journal._checkpoint import Checkpoint, open_checkpoint
from refusalkit.journal._note import NoteVerifier
from refusalkit.journal._tree import (
    EMPTY_ROOT,
    consistency_ranges,
    frontier_nodes,
    leaf_hash,
    node_hash,
    range_nodes,
    root_from_frontier,
    verify_consistency,
)

__all__ = ["LogSource", "VerifyReport", "verify_log"]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What a full verification checked; returned only when everything passed."""

    origin: str
    size: int
    root: str
    checkpoints: int
    latest_checkpoint_size: int
    unsigned_entries: int
    key_names: tuple[str, ...]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the CLI and the HTTP service."""
        return {
            "ok": True,
            "origin": self.origin,
            "size": self.size,
            "root": self.root,
            "checkpoints": self.checkpoints,
            "latest_checkpoint_size": self.latest_checkpoint_size,
            "unsigned_entries": self.unsigned_entries,
            "key_names": list(self.key_names),
            "seconds": round(self.seconds, 3),
        }


@dataclass(slots=True)
class LogSource:
    """Where a log's parts come from: entry rows, stored nodes by level, and checkpoints."""

    size: int
    entries: Iterable[tuple[int, bytes]]
    extra_entries: int
    levels: Callable[[int], Iterator[tuple[int, bytes]] | None] | None
    checkpoints: Sequence[str]
    progress: Callable[[int], None] | None = None


@dataclass(slots=True)
class _Issues:
    found: list[tuple[int, str]] = field(default_factory=list)

    def add(self, index: int, message: str) -> None:
        self.found.append((index, message))

    def raise_first(self) -> None:
        if self.found:
            index, message = min(self.found, key=lambda item: item[0])
            more = (
                f" ({len(self.found) - 1} more problem(s) after it)" if len(self.found) > 1 else ""
            )
            raise VerificationError(f"{message}{more}", index=index)


def _leaves(source: LogSource, issues: _Issues) -> list[bytes]:
    """Leaf hashes of the contiguous, well-ordered prefix of entries; notes the first gap."""
    leaves: list[bytes] = []
    for index, data in source.entries:
        if index != len(leaves):
            issues.add(len(leaves), f"entry {len(leaves)} is missing or out of place")
            return leaves
        leaves.append(leaf_hash(data))
        if source.progress and not index % 4096:
            source.progress(index)
    if len(leaves) < source.size:
        issues.add(len(leaves), f"log truncated: {len(leaves)} entries, head says {source.size}")
    if source.extra_entries:
        issues.add(
            source.size, f"{source.extra_entries} entries lie beyond the head size {source.size}"
        )
    return leaves


def _build_levels(leaves: list[bytes]) -> list[list[bytes]]:
    levels = [leaves]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
    return levels


def _first_stored_mismatch(
    stored: Iterator[tuple[int, bytes]], hashes: list[bytes], limit: int
) -> int:
    """The first index below ``limit`` whose stored hash is missing or differs, else ``limit``."""
    expected = 0
    for index, digest in stored:
        if expected >= limit or index != expected or digest != hashes[index]:
            break
        expected += 1
    return min(expected, limit)


def _compare_stored(source: LogSource, levels: list[list[bytes]], issues: _Issues) -> None:
    """Stored leaf hashes must equal the entries' (a mismatch names the entry); stored upper
    nodes over entries before the first bad one must equal the recomputed ones."""
    if source.levels is None:
        return
    good = len(levels[0])
    for level, hashes in enumerate(levels):
        limit, stored = good >> level, source.levels(level)
        if stored is None:
            continue
        bad = _first_stored_mismatch(stored, hashes, limit)
        if bad < limit:
            issues.add(bad << level, _node_problem(level, bad))
            good = min(good, bad << level)


def _node_problem(level: int, index: int) -> str:
    if level == 0:
        return f"entry {index} does not match the leaf hash it was logged with"
    return f"stored tree node ({level}, {index}) is missing or differs from the entries"


def _root(levels: list[list[bytes]], size: int) -> bytes:
    return root_from_frontier([levels[lv][ix] for lv, ix in frontier_nodes(size)])


def _range_hash(levels: list[list[bytes]], start: int, end: int) -> bytes:
    return root_from_frontier([levels[lv][ix] for lv, ix in range_nodes(start, end)])


def _check_consistency(levels: list[list[bytes]], old: Checkpoint, new: Checkpoint) -> None:
    if old.size == 0:
        return
    proof = [_range_hash(levels, a, b) for a, b in consistency_ranges(old.size, new.size)]
    verify_consistency(old.size, new.size, proof, old.root, new.root)


def _check_checkpoints(  # noqa: PLR0917 (internal)
    source: LogSource,
    origin: str,
    trusted: Sequence[NoteVerifier],
    levels: list[list[bytes]],
    good: int,
    issues: _Issues,
) -> tuple[int, int]:
    """Verify each checkpoint; returns (how many verified, the largest verified size)."""
    vouched, count, previous = 0, 0, None
    for number, note in enumerate(source.checkpoints, start=1):
        try:
            checkpoint = open_checkpoint(note, trusted, origin=origin)
        except VerificationError as exc:
            issues.add(vouched, f"checkpoint #{number} does not verify: {exc.message}")
            continue
        if checkpoint.size > source.size:
            issues.add(
                source.size,
                f"checkpoint #{number} covers {checkpoint.size} entries but the log has "
                f"{source.size}: truncated",
            )
            continue
        if checkpoint.size <= good:
            root = _root(levels, checkpoint.size) if checkpoint.size else EMPTY_ROOT
            if root != checkpoint.root:
                issues.add(
                    vouched,
                    f"checkpoint #{number} (size {checkpoint.size}) does not match the entries",
                )
                continue
            if previous is not None:
                older, newer = sorted((previous, checkpoint), key=lambda c: c.size)
                try:
                    _check_consistency(levels, older, newer)
                except VerificationError as exc:
                    issues.add(older.size, f"checkpoint #{number}: {exc.message}")
        count += 1
        vouched = max(vouched, checkpoint.size)
        previous = checkpoint
    return count, vouched


def verify_log(source: LogSource, origin: str, trusted: Sequence[NoteVerifier]) -> VerifyReport:
    """Recompute the tree and check it against stored nodes and every signed checkpoint.

    Raises ``VerificationError`` with the first bad index; returns a ``VerifyReport`` otherwise.
    """
    started = time.perf_counter()
    issues = _Issues()
    leaves = _leaves(source, issues)
    levels = _build_levels(leaves)
    _compare_stored(source, levels, issues)
    good = min([len(leaves), *(index for index, _ in issues.found)])
    count, vouched = _check_checkpoints(source, origin, trusted, levels, good, issues)
    issues.raise_first()
    root = _root(levels, source.size) if source.size else EMPTY_ROOT
    return VerifyReport(
        origin=origin,
        size=source.size,
        root=root.hex(),
        checkpoints=count,
        latest_checkpoint_size=vouched,
        unsigned_entries=source.size - vouched,
        key_names=tuple(sorted({v.name for v in trusted})),
        seconds=time.perf_counter() - started,
    )
