"""Full verification of a log: recompute the RFC 9162 tree from the entries, check every stored
leaf and node hash and every signed checkpoint against it, and check consistency between
successive checkpoints (docs/design/journal.md).

Works from any source of entry rows and checkpoints (a live store or an exported bundle), in one
pass over the entries. Failures are collected and the one with the smallest entry index is
raised, so the reported ``VerificationError.index`` is the first index from which the log cannot
be trusted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from refusalkit.errors import VerificationError
from refusalkit.journal._checkpoint import Checkpoint, open_checkpoint
from refusalkit.journal._errors import EquivocationError, Evidence, UntrustedKeyError
from refusalkit.journal._note import NoteVerifier
from refusalkit.journal._records import FIELDS, entry_fields
from refusalkit.journal._tree import (
    EMPTY_ROOT,
    HASH_SIZE,
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
    checkpoint_notes: tuple[str, ...] = ()
    """The signed checkpoints that matched the entries (all of one tree), for quorum checks."""

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
    """Where a log's parts come from: entry rows and checkpoints.

    ``entries`` yields ``(index, entry bytes, stored leaf hash, stored node hashes)`` in index
    order (see ``refusalkit.journal._store``), followed, when ``indexed``, by the row's stored
    index columns (``FIELDS``); ``stored_nodes`` says whether the source keeps node hashes at all
    (a store does; a bundle has only leaf hashes). ``recorded_checkpoints`` is how many
    checkpoints the source says it ever stored; fewer in ``checkpoints`` means some were removed;
    ``signed_before`` says the source's metadata records a signing key (so no checkpoints at all
    means they were deleted). ``anchors`` are ``(label, note)`` checkpoints held outside the
    source (``--trusted-checkpoint``): the log must extend each.
    """

    size: int
    entries: Iterable[tuple[Any, ...]]
    extra_entries: int
    checkpoints: Sequence[str]
    stored_nodes: bool = True
    progress: Callable[[int], None] | None = None
    indexed: bool = False
    recorded_checkpoints: int = 0
    signed_before: bool = False
    anchors: Sequence[tuple[str, str]] = ()


@dataclass(slots=True)
class _Issues:
    """Problems found, as ``(index, message)``; ``found`` are those of the tree (they bound which
    stored hashes and checkpoints can still be compared), ``columns`` those of index columns."""

    found: list[tuple[int, str]] = field(default_factory=list)
    columns: list[tuple[int, str]] = field(default_factory=list)
    untrusted: UntrustedKeyError | None = None
    matched: list[tuple[Checkpoint, str]] = field(default_factory=list)
    mismatched: list[tuple[Checkpoint, str]] = field(default_factory=list)

    def add(self, index: int, message: str) -> None:
        self.found.append((index, message))

    def raise_first(self) -> None:
        every = self.found + self.columns
        if every:
            index, message = min(every, key=lambda item: item[0])
            more = f" ({len(every) - 1} more problem(s) after it)" if len(every) > 1 else ""
            raise VerificationError(f"{message}{more}", index=index)
        if self.untrusted is not None:  # a key mismatch, told apart from tampering
            raise self.untrusted


def _scan(source: LogSource, issues: _Issues) -> list[list[bytes]]:
    """Hash the contiguous prefix of entries into every tree level (RFC 9162 §2.1.1), checking
    each stored leaf hash and stored node hash as its node completes; notes the first gap.

    A stored hash is compared only while every leaf under it lies before the first problem found
    so far, so a bad entry is named by its own index and not by a node above it.
    """
    levels: list[list[bytes]] = [[]]
    leaves, good, nodes = levels[0], sys.maxsize, source.stored_nodes
    columns_ok, fields = source.indexed, entry_fields
    for row in source.entries:
        index, data, stored_leaf, stored = row[0], row[1], row[2], row[3]
        if index != len(leaves):
            issues.add(len(leaves), f"entry {len(leaves)} is missing or out of place")
            break
        digest = leaf_hash(data)
        leaves.append(digest)
        if stored_leaf != digest and index < good:
            issues.add(index, _node_problem(0, index))
            good = index
        if columns_ok and row[4:] != fields(data):
            issues.columns.append((index, _columns_problem(index, row[4:], fields(data))))
            columns_ok = False
        if index & 1:
            level, pos, made = 0, index, []
            while pos & 1:
                digest = node_hash(levels[level][pos - 1], digest)
                level, pos = level + 1, pos >> 1
                if len(levels) == level:
                    levels.append([])
                levels[level].append(digest)
                made.append(digest)
            if nodes and index < good and b"".join(made) != stored:
                good = _bad_node(index, made, stored, issues)
        if source.progress and not index % 4096:
            source.progress(index)
    if len(leaves) < source.size:
        issues.add(len(leaves), f"log truncated: {len(leaves)} entries, head says {source.size}")
    if source.extra_entries:
        issues.add(
            source.size, f"{source.extra_entries} entries lie beyond the head size {source.size}"
        )
    return levels


def _columns_problem(
    index: int, stored: Sequence[Any], wanted: tuple[str | None, ...] | None
) -> str:
    """Which index columns of entry ``index`` differ from those its bytes give."""
    if wanted is None:
        return f"entry {index} is not a JSON object"
    differ = [
        f"{f}={s!r} (bytes say {w!r})"
        for f, s, w in zip(FIELDS, stored, wanted, strict=True)
        if s != w
    ]
    return f"entry {index}: index columns differ from the entry: {', '.join(differ)}"


def _bad_node(index: int, made: list[bytes], stored: bytes | None, issues: _Issues) -> int:
    """Note the lowest node completed by entry ``index`` whose stored hash differs from the
    recomputed one (``made``, level 1 first); returns its first leaf."""
    level = next(
        lv
        for lv, digest in enumerate(made, start=1)
        if (stored or b"")[(lv - 1) * HASH_SIZE : lv * HASH_SIZE] != digest
    )
    node = ((index + 1) >> level) - 1
    issues.add(node << level, _node_problem(level, node))
    return node << level


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
    """Verify each checkpoint; returns (how many verified, the largest verified size).

    Notes deleted checkpoints (fewer than ``recorded_checkpoints``) at the largest size the
    remaining signed ones claim: the deleted ones may have covered anything beyond it.
    """
    vouched, count, previous, claimed = 0, 0, None, 0
    strangers: list[tuple[int, int, UntrustedKeyError]] = []
    for number, note in enumerate(source.checkpoints, start=1):
        try:
            checkpoint = open_checkpoint(note, trusted, origin=origin)
        except UntrustedKeyError as exc:
            strangers.append((vouched, number, exc))
            continue
        except VerificationError as exc:
            issues.add(vouched, f"checkpoint #{number} does not verify: {exc.message}")
            continue
        claimed = max(claimed, min(checkpoint.size, source.size))
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
                issues.mismatched.append((checkpoint, note))
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
        if checkpoint.size <= good:
            issues.matched.append((checkpoint, note))
        count += 1
        vouched = max(vouched, checkpoint.size)
        previous = checkpoint
    _sort_strangers(strangers, count, issues)
    if not source.checkpoints and source.signed_before and not source.recorded_checkpoints:
        issues.add(
            0,
            "the store's metadata says a key signed this log, but no checkpoint is stored: "
            "checkpoints were deleted",
        )
    if len(source.checkpoints) < source.recorded_checkpoints:
        issues.add(
            claimed,
            f"checkpoints were removed: {len(source.checkpoints)} stored, "
            f"{source.recorded_checkpoints} recorded",
        )
    return count, vouched


def _sort_strangers(
    strangers: list[tuple[int, int, UntrustedKeyError]], verified: int, issues: _Issues
) -> None:
    """Checkpoints signed by keys not passed: a key mismatch when none verified at all (the
    caller holds the wrong key), else rows slipped in among the log's own (tampering)."""
    if strangers and not verified:
        _, number, exc = strangers[0]
        issues.untrusted = UntrustedKeyError(f"checkpoint #{number}", exc.signers, exc.passed)
        return
    for vouched, number, exc in strangers:
        issues.add(vouched, f"checkpoint #{number} does not verify: {exc.message}")


def _evidence(
    levels: list[list[bytes]], first: tuple[Checkpoint, str], second: tuple[Checkpoint, str]
) -> EquivocationError:
    """Evidence that ``first`` is not a prefix of ``second`` (whose tree is ``levels``)."""
    a, b = first[0].size, second[0].size
    proof = [_range_hash(levels, x, y).hex() for x, y in consistency_ranges(a, b)] if a < b else []
    implied = _root(levels, a) if a and a < b else None
    return EquivocationError(Evidence(first, second, tuple(proof), implied), index=a)


def _check_equivocation(
    levels: list[list[bytes]],
    mismatched: Sequence[tuple[Checkpoint, str]],
    matched: Sequence[tuple[Checkpoint, str]],
) -> None:
    """Two validly signed checkpoints in one log where the entries match the larger and not the
    smaller: the signer signed two histories (``EquivocationError``)."""
    for bad in mismatched:
        larger = next((good for good in matched if good[0].size >= bad[0].size), None)
        if larger is not None:
            raise _evidence(levels, bad, larger)


def _check_anchor(  # noqa: PLR0917 (internal)
    levels: list[list[bytes]],
    good: int,
    anchor: tuple[str, str],
    origin: str,
    trusted: Sequence[NoteVerifier],
    issues: _Issues,
) -> None:
    """The log must extend a checkpoint held outside it: same root at its size, and at least as
    many entries. A signed checkpoint in the log that disagrees with it is equivocation."""
    label, note = anchor
    try:
        held = open_checkpoint(note, trusted, origin=origin)
    except UntrustedKeyError as exc:
        raise UntrustedKeyError(f"trusted checkpoint {label}", exc.signers, exc.passed) from exc
    size = len(levels[0])
    if held.size > size:
        issues.add(
            size,
            f"the log holds {size} entries but the trusted checkpoint {label} has size "
            f"{held.size}: it was truncated or rolled back",
        )
        return
    if held.size > good or (_root(levels, held.size) if held.size else EMPTY_ROOT) == held.root:
        return
    larger = next((c for c in issues.matched if c[0].size >= held.size), None)
    if larger is not None:
        raise _evidence(levels, (held, note), larger)
    issues.add(
        0,
        f"the log does not extend the trusted checkpoint {label} (size {held.size}, root "
        f"{held.root.hex()}): its first {held.size} entries have another root",
    )


def verify_log(source: LogSource, origin: str, trusted: Sequence[NoteVerifier]) -> VerifyReport:
    """Recompute the tree and check it against stored nodes and every signed checkpoint.

    Raises ``VerificationError`` with the first bad index; returns a ``VerifyReport`` otherwise.
    """
    started = time.perf_counter()
    issues = _Issues()
    levels = _scan(source, issues)
    good = min([len(levels[0]), *(index for index, _ in issues.found)])
    count, vouched = _check_checkpoints(source, origin, trusted, levels, good, issues)
    _check_equivocation(levels, issues.mismatched, issues.matched)
    for label, note in source.anchors:
        _check_anchor(levels, good, (label, note), origin, trusted, issues)
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
        checkpoint_notes=tuple(note for _, note in issues.matched),
    )
