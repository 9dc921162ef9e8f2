"""RFC 9162 §2.1 Merkle tree math: hashes, proof shapes, and proof verifiers.

Pure functions, no I/O. A *node* ``(level, index)`` is the perfect subtree over the leaves
``[index * 2**level, (index + 1) * 2**level)``; stores persist these once complete, so the root of
any prefix and every proof need only O(log n) stored nodes. The verifiers need nothing but the
proof, the sizes and the hashes (RFC 9162 §2.1.3.2 and §2.1.4.2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from refusalkit.errors import ProofError, VerificationError

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "Node",
    "consistency_ranges",
    "extend_frontier",
    "frontier_nodes",
    "inclusion_ranges",
    "leaf_hash",
    "node_hash",
    "range_nodes",
    "root_from_frontier",
    "root_of_leaves",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = tuple[int, int]
"""A perfect subtree: ``(level, index)``; it covers ``2**level`` leaves."""

_sha256 = hashlib.sha256


def leaf_hash(entry: bytes) -> bytes:
    """RFC 9162 §2.1.1: ``SHA-256(0x00 || entry)``."""
    return _sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 §2.1.1: ``SHA-256(0x01 || left || right)``."""
    return _sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n > 1), RFC 9162 §2.1.1."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of_leaves(hashes: Sequence[bytes]) -> bytes:
    """MTH over leaf hashes (RFC 9162 §2.1.1), built bottom-up; the empty tree is SHA-256("")."""
    if not hashes:
        return EMPTY_ROOT
    frontier: list[tuple[int, bytes]] = []
    for h in hashes:
        extend_frontier(frontier, h)
    return root_from_frontier([h for _, h in frontier])


def range_nodes(start: int, end: int) -> list[Node]:
    """The perfect subtrees that make up leaves ``[start, end)``, largest (leftmost) first.

    Valid for the ranges that proofs and prefixes use: ``start`` is aligned to the largest block.
    The range's hash is these nodes folded from the right (see ``fold_right``).
    """
    out: list[Node] = []
    pos = start
    while pos < end:
        width = end - pos
        level = width.bit_length() - 1
        while pos % (1 << level):
            level -= 1
        out.append((level, pos >> level))
        pos += 1 << level
    return out


def frontier_nodes(size: int) -> list[Node]:
    """The perfect subtrees that make up a tree of ``size`` leaves (one per set bit of size)."""
    return range_nodes(0, size)


def root_from_frontier(hashes: Sequence[bytes]) -> bytes:
    """Fold perfect-subtree hashes (largest first) into the MTH of their concatenation."""
    if not hashes:
        return EMPTY_ROOT
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


def extend_frontier(frontier: list[tuple[int, bytes]], leaf: bytes) -> list[tuple[int, bytes]]:
    """Append one leaf hash to a frontier of ``(level, hash)``, largest first, in place.

    Returns the perfect nodes completed by this leaf, as ``(level, hash)`` pairs, level 0 first.
    """
    made = [(0, leaf)]
    frontier.append((0, leaf))
    while len(frontier) > 1 and frontier[-1][0] == frontier[-2][0]:
        level, right = frontier.pop()
        _, left = frontier.pop()
        merged = (level + 1, node_hash(left, right))
        frontier.append(merged)
        made.append(merged)
    return made


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """Leaf ranges whose MTHs form the inclusion proof of ``index`` in ``size`` (§2.1.3.1).

    Listed bottom-up, the order of the proof's hashes.
    """
    if not 0 <= index < size:
        raise ProofError(f"index {index} is not in a tree of size {size}")
    lo, hi, path = 0, size, []
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append((lo + k, hi))
            hi = lo + k
        else:
            path.append((lo, lo + k))
            lo += k
    path.reverse()
    return path


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """Leaf ranges whose MTHs form the consistency proof from ``old`` to ``new`` (§2.1.4.1)."""
    if not 0 < old <= new:
        raise ProofError(f"no consistency proof from size {old} to size {new}")
    lo, hi, m, complete, path = 0, new, old, True, []
    while True:
        if m == hi - lo:
            if not complete:
                path.append((lo, hi))
            break
        k = _split(hi - lo)
        if m <= k:
            path.append((lo + k, hi))
            hi = lo + k
        else:
            path.append((lo, lo + k))
            lo, m, complete = lo + k, m - k, False
    path.reverse()
    return path


def hashes_for_ranges(
    ranges: Iterable[tuple[int, int]], fetch: Callable[[list[Node]], Mapping[Node, bytes]]
) -> list[bytes]:
    """The MTH of each range, from stored perfect nodes fetched in one call."""
    plans = [range_nodes(a, b) for a, b in ranges]
    wanted = sorted({node for plan in plans for node in plan})
    got = fetch(wanted)
    missing = [n for n in wanted if n not in got]
    if missing:
        raise VerificationError(
            f"the store lacks tree node {missing[0]}; it is incomplete or corrupt",
            index=missing[0][1] << missing[0][0],
        )
    return [root_from_frontier([got[n] for n in plan]) for plan in plans]


def _shift_until_odd(fn: int, sn: int) -> tuple[int, int]:
    while fn and not fn & 1:
        fn >>= 1
        sn >>= 1
    return fn, sn


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root implied by an inclusion proof; raises if the shape is wrong."""
    if not 0 <= index < size:
        raise VerificationError(f"index {index} is not in a tree of size {size}", index=None)
    if len(leaf) != HASH_SIZE:
        raise VerificationError(f"leaf hash must be {HASH_SIZE} bytes, not {len(leaf)}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise VerificationError("inclusion proof is longer than the tree allows")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            fn, sn = _shift_until_odd(fn, sn)
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise VerificationError("inclusion proof is shorter than the tree needs")
    return r


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """RFC 9162 §2.1.3.2: raise ``VerificationError`` unless ``leaf`` is at ``index`` under root."""
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise VerificationError(
            f"inclusion proof of index {index} does not lead to the root of size {size}",
            index=index,
        )


def verify_consistency(  # noqa: PLR0912 (RFC 9162 §2.1.4.2, step by step)
    old: int, new: int, proof: Sequence[bytes], old_root: bytes, new_root: bytes
) -> None:
    """RFC 9162 §2.1.4.2: raise ``VerificationError`` unless tree ``old`` is a prefix of ``new``."""
    if old == 0:
        raise VerificationError("a consistency proof needs an old size of at least 1")
    if new < old:
        raise VerificationError(f"new size {new} is smaller than old size {old}")
    if old == new:
        if proof:
            raise VerificationError("equal sizes need an empty consistency proof")
        if old_root != new_root:
            raise VerificationError(f"two different roots for the same size {old}")
        return
    if not proof:
        raise VerificationError("empty consistency proof for different sizes")
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise VerificationError("consistency proof is longer than the sizes allow")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            fn, sn = _shift_until_odd(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0 or fr != old_root or sr != new_root:
        raise VerificationError(f"consistency proof from size {old} to {new} does not verify")
