"""The journal as a C2SP tlog-tiles tree of static files (c2sp.org/tlog-tiles), so standard
monitors and witnesses read it without refusalkit's client.

``export_tiles`` writes, under a directory: ``checkpoint`` (the latest signed checkpoint),
``tile/<L>/<N>`` (256 hashes of 32 bytes; level 0 the RFC 9162 leaf hashes, level ``l`` the
Merkle Tree Hash of each full tile of level ``l - 1``), ``tile/entries/<N>`` (the RFC 8785 bytes
each leaf hashes, each as a big-endian uint16 length then the bytes), and for every tree size a
checkpoint was signed for, the partial tiles ``.p/<W>`` it needs ("Merkle Tree", "Log
Entries"). Only the signed part of the log is written. Full tiles are immutable: a file that is
already there is compared, never rewritten, so re-running on a grown log only adds files, and a
store whose history changed is refused (``VerificationError``) instead of overwriting what
monitors may have read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from refusalkit._durable import write_durably
from refusalkit.errors import StoreError, UsageError, VerificationError
from refusalkit.journal._checkpoint import Checkpoint, open_checkpoint
from refusalkit.journal._journal import Journal
from refusalkit.journal._note import parse_note
from refusalkit.journal._tree import EMPTY_ROOT, leaf_hash, root_of_leaves

__all__ = [
    "TILE_WIDTH",
    "TilesReport",
    "export_tiles",
    "parse_tile_path",
    "read_tile",
    "tile_path",
]

TILE_WIDTH = 256
_MAX_ENTRY = 0xFFFF


def tile_path(level: int | str, index: int, width: int | None = None) -> str:
    """``tile/<L>/<N>[.p/<W>]``: ``N`` in zero-padded 3-digit elements, all but the last
    prefixed ``x`` (``1234067`` -> ``x001/x234/067``)."""
    digits = str(index)
    digits = digits.zfill(-(-len(digits) // 3) * 3)
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    encoded = "/".join([*(f"x{g}" for g in groups[:-1]), groups[-1]])
    suffix = f".p/{width}" if width is not None and width != TILE_WIDTH else ""
    return f"tile/{level}/{encoded}{suffix}"


@dataclass(frozen=True, slots=True)
class TilesReport:
    """What an export wrote: the tree size of its checkpoint, files written and files that
    were already there (identical)."""

    size: int
    written: int
    kept: int


class _Writer:
    """Writes files that must never change: an existing one must be identical."""

    def __init__(self, root: Path) -> None:
        self.root, self.written, self.kept = root, 0, 0

    def put(self, relative: str, data: bytes) -> None:
        path = self.root / relative
        if path.exists():
            if path.read_bytes() != data:
                raise VerificationError(
                    f"{path} already exists with other contents: the log's history changed",
                    hint="Tiles are immutable once published; treat the store as tampered "
                    "with (`refusalkit journal verify STORE`), and keep the old tiles.",
                )
            self.kept += 1
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        self.written += 1


def _bundle(entries: Sequence[bytes], start: int) -> bytes:
    out = bytearray()
    for number, data in enumerate(entries, start=start):
        if len(data) > _MAX_ENTRY:
            raise UsageError(
                f"entry {number} has {len(data)} bytes; a tlog-tiles entry bundle holds at most "
                f"{_MAX_ENTRY}"
            )
        out += len(data).to_bytes(2, "big") + data
    return bytes(out)


def _head(journal: Journal) -> tuple[Checkpoint, str, list[int]] | None:
    """The largest signed checkpoint (verified against the keyring), its note, every size
    signed up to it."""
    best: tuple[Checkpoint, str] | None = None
    sizes = set()
    for note in journal.checkpoints():
        checkpoint = open_checkpoint(note, journal.trusted(), origin=journal.origin)
        sizes.add(checkpoint.size)
        if best is None or checkpoint.size > best[0].size:
            best = checkpoint, note
    if best is None:
        return None
    return best[0], best[1], sorted(s for s in sizes if 0 < s <= best[0].size)


def _leaves(journal: Journal, size: int, writer: _Writer) -> list[bytes]:
    """Leaf hashes of ``[0, size)``, writing each full entry bundle on the way."""
    leaves: list[bytes] = []
    group: list[bytes] = []
    for row in journal.store.iter_indexed(0, size):
        group.append(bytes(row[1]))
        leaves.append(leaf_hash(group[-1]))
        if len(group) == TILE_WIDTH:
            start = len(leaves) - TILE_WIDTH
            writer.put(tile_path("entries", start // TILE_WIDTH), _bundle(group, start))
            group = []
    if len(leaves) != size:
        raise VerificationError(f"the store has {len(leaves)} entries below size {size}")
    return leaves


def _levels(leaves: list[bytes]) -> Iterator[list[bytes]]:
    """The hashes of each tile level: level 0 the leaves, level ``l`` one hash per full tile of
    level ``l - 1``."""
    level = leaves
    while level:
        yield level
        level = [
            root_of_leaves(level[i : i + TILE_WIDTH])
            for i in range(0, len(level) - TILE_WIDTH + 1, TILE_WIDTH)
        ]


def _write_hashes(levels: list[list[bytes]], sizes: Sequence[int], writer: _Writer) -> None:
    for number, hashes in enumerate(levels):
        for n in range(len(hashes) // TILE_WIDTH):
            writer.put(tile_path(number, n), b"".join(hashes[n * 256 : (n + 1) * 256]))
        for size in sizes:
            width = (size // TILE_WIDTH**number) % TILE_WIDTH
            n = size // TILE_WIDTH ** (number + 1)
            if width:
                part = hashes[n * TILE_WIDTH : n * TILE_WIDTH + width]
                writer.put(tile_path(number, n, width), b"".join(part))


def _write_partial_bundles(journal: Journal, sizes: Sequence[int], writer: _Writer) -> None:
    for size in sizes:
        width, n = size % TILE_WIDTH, size // TILE_WIDTH
        if width:
            start = n * TILE_WIDTH
            data = _bundle(journal.entries(start, size), start)
            writer.put(tile_path("entries", n, width), data)


def export_tiles(journal: Journal, out: str | Path) -> TilesReport:
    """Write the signed part of ``journal`` as a C2SP tlog-tiles tree under ``out``.

    Raises ``UsageError`` when nothing is signed yet, ``VerificationError`` when the entries do
    not give the checkpoint's root or an existing tile would change.
    """
    head = _head(journal)
    if head is None:
        raise UsageError(
            "the journal has no signed checkpoint to export tiles for",
            hint="Sign one first: `refusalkit journal checkpoint STORE`.",
        )
    checkpoint, note, sizes = head
    writer = _Writer(Path(out))
    leaves = _leaves(journal, checkpoint.size, writer)
    if (root_of_leaves(leaves) if leaves else EMPTY_ROOT) != checkpoint.root:
        raise VerificationError(
            f"the store's first {checkpoint.size} entries do not give the signed root",
            hint="Run `refusalkit journal verify STORE`: the store was tampered with.",
        )
    _write_hashes(list(_levels(leaves)), sizes, writer)
    _write_partial_bundles(journal, sizes, writer)
    parse_note(note)
    write_durably(Path(out) / "checkpoint", note)  # the one file that changes as the log grows
    return TilesReport(checkpoint.size, writer.written, writer.kept)


_TILE = re.compile(
    r"(?P<level>entries|0|[1-9][0-9]?)/(?P<index>(?:x[0-9]{3}/)*[0-9]{3})"
    r"(?:\.p/(?P<width>[1-9][0-9]{0,2}))?"
)


def parse_tile_path(path: str) -> tuple[str, int, int] | None:
    """``<L>/<N>[.p/<W>]`` (the part after ``tile/``) as ``(level or "entries", index, width)``;
    None for anything the spec does not allow (a level above 63, a width of 256 or more)."""
    match = _TILE.fullmatch(path)
    if match is None:
        return None
    level, explicit = match["level"], match["width"]
    if explicit is not None and int(explicit) >= TILE_WIDTH:
        return None
    if level != "entries" and int(level) > 63:
        return None
    width = int(explicit) if explicit is not None else TILE_WIDTH
    index = int(match["index"].replace("x", "").replace("/", ""))
    return level, index, width


def read_tile(journal: Journal, level: str, index: int, width: int, size: int) -> bytes | None:
    """The bytes of one tile or entry bundle of the tree of ``size`` (the signed head), read
    from the store; None when the tree of ``size`` does not contain it (never served)."""
    height = 0 if level == "entries" else int(level)
    if (index * TILE_WIDTH + width) * TILE_WIDTH**height > size:
        return None
    start = index * TILE_WIDTH
    if level == "entries":
        return _bundle(journal.entries(start, start + width), start)
    wanted = [(8 * height, start + i) for i in range(width)]
    found = journal.store.nodes(wanted)
    if len(found) != width:
        raise StoreError(f"journal {journal.store.location} is missing tree nodes of a tile")
    return b"".join(found[node] for node in wanted)
