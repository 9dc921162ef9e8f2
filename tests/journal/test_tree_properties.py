"""Property tests of the RFC 9162 tree: proofs from stored nodes verify, changed bytes fail."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refusalkit.errors import ProofError, VerificationError
from refusalkit.journal import leaf_hash, verify_consistency, verify_inclusion
from refusalkit.journal._store import pick_nodes, plan_nodes
from refusalkit.journal._tree import (
    EMPTY_ROOT,
    Node,
    consistency_ranges,
    frontier_nodes,
    hashes_for_ranges,
    inclusion_ranges,
    node_hash,
    root_of_leaves,
)


def _mth(leaves: list[bytes]) -> bytes:
    """The recursive definition of RFC 9162 §2.1.1, written independently of the module."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _tree(n: int) -> tuple[list[bytes], dict[int, tuple[bytes, bytes | None]]]:
    """Leaf hashes and the entry rows a store keeps: ``{index: (leaf, node hashes)}``."""
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(n)]
    split = n // 3  # appended in two batches: the second one starts from the first's frontier
    made = plan_nodes(0, [], leaves[:split])
    first = {(0, i): h for i, h in enumerate(leaves[:split])}
    for i, hashes in enumerate(made):
        for level in range(1, len(hashes or b"") // 32 + 1):
            first[level, ((i + 1) >> level) - 1] = (hashes or b"")[(level - 1) * 32 :][:32]
    frontier = [first[node] for node in frontier_nodes(split)]
    made += plan_nodes(split, frontier, leaves[split:])
    stored = sum(len(h or b"") for h in made) // 32
    assert stored == n - bin(n).count("1")  # each complete node above the leaves, once
    return leaves, {i: (leaf, made[i]) for i, leaf in enumerate(leaves)}


def _fetch(rows: dict[int, tuple[bytes, bytes | None]]):  # type: ignore[no-untyped-def]
    return lambda wanted: pick_nodes(wanted, rows)


def _root(nodes: dict[Node, bytes], n: int) -> bytes:
    return hashes_for_ranges([(0, n)], _fetch(nodes))[0]


def test_known_hashes() -> None:
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert (
        leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    )
    assert (
        node_hash(b"a" * 32, b"b" * 32) == hashlib.sha256(b"\x01" + b"a" * 32 + b"b" * 32).digest()
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=300))
def test_stored_nodes_give_the_rfc_root_of_every_prefix(n: int) -> None:
    leaves, nodes = _tree(n)
    assert root_of_leaves(leaves) == _mth(leaves)
    for size in {1, n // 2 or 1, n}:
        assert _root(nodes, size) == _mth(leaves[:size])
    assert len(frontier_nodes(n)) == bin(n).count("1")


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=130), st.data())
def test_every_inclusion_proof_verifies_and_a_changed_byte_fails(
    n: int, data: st.DataObject
) -> None:
    leaves, nodes = _tree(n)
    root = _mth(leaves)
    for index in range(n):
        proof = hashes_for_ranges(inclusion_ranges(index, n), _fetch(nodes))
        verify_inclusion(index, n, leaves[index], proof, root)
    index = data.draw(st.integers(0, n - 1))
    proof = hashes_for_ranges(inclusion_ranges(index, n), _fetch(nodes))
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1))
        bit = data.draw(st.integers(0, 255))
        bad = bytearray(proof[which])
        bad[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(VerificationError):
            verify_inclusion(
                index, n, leaves[index], [*proof[:which], bytes(bad), *proof[which + 1 :]], root
            )
    wrong_leaf = leaf_hash(b"not this entry")
    with pytest.raises(VerificationError):
        verify_inclusion(index, n, wrong_leaf, proof, root)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=70), st.data())
def test_every_pair_of_sizes_is_consistent_and_a_changed_byte_fails(
    n: int, data: st.DataObject
) -> None:
    leaves, nodes = _tree(n)
    roots = [b""] + [_mth(leaves[:m]) for m in range(1, n + 1)]
    for old in range(1, n + 1):
        for new in range(old, n + 1):
            proof = (
                hashes_for_ranges(consistency_ranges(old, new), _fetch(nodes)) if old < new else []
            )
            verify_consistency(old, new, proof, roots[old], roots[new])
    old = data.draw(st.integers(1, n))
    new = data.draw(st.integers(old, n))
    if old < new:
        proof = hashes_for_ranges(consistency_ranges(old, new), _fetch(nodes))
        which = data.draw(st.integers(0, len(proof) - 1))
        bad = bytearray(proof[which])
        bad[data.draw(st.integers(0, 31))] ^= 0x01
        with pytest.raises(VerificationError):
            verify_consistency(
                old, new, [*proof[:which], bytes(bad), *proof[which + 1 :]], roots[old], roots[new]
            )
        with pytest.raises(VerificationError):
            verify_consistency(old, new, proof[:-1], roots[old], roots[new])


def test_proof_shapes_refuse_impossible_sizes() -> None:
    with pytest.raises(ProofError):
        inclusion_ranges(5, 5)
    with pytest.raises(ProofError):
        consistency_ranges(0, 3)
    with pytest.raises(ProofError):
        consistency_ranges(4, 3)


def test_proof_reads_are_logarithmic() -> None:
    n = 1_000_003
    wanted: set[Node] = set()

    def count(nodes: list[Node]) -> dict[Node, bytes]:
        wanted.update(nodes)
        return dict.fromkeys(nodes, b"\x00" * 32)

    hashes_for_ranges(inclusion_ranges(12345, n), count)
    assert len(wanted) <= 2 * n.bit_length()
    wanted.clear()
    hashes_for_ranges(consistency_ranges(777_777, n), count)
    assert len(wanted) <= 2 * n.bit_length()
