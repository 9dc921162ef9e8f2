"""C2SP tlog-tiles export, read back as a tiles client would: from the files alone, each
tile checked against the level below and the checkpoint's root recomputed from the tiles."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.errors import VerificationError
from refusalkit.journal import (
    export_tiles,
    leaf_hash,
    open_journal,
    parse_checkpoint_body,
    parse_note,
    tile_path,
)
from refusalkit.journal._tree import root_of_leaves
from refusalkit.keyring import Keyring

W = 256


def _grow(journal: object, start: int, end: int) -> None:
    for low in range(start, end, 20_000):
        high = min(end, low + 20_000)
        journal.append([{"schema": "t/v1", "n": i} for i in range(low, high)])  # type: ignore[attr-defined]


def _read_tile(root: Path, level: int, n: int, width: int) -> list[bytes]:
    data = (root / tile_path(level, n, width)).read_bytes()
    assert len(data) == 32 * width
    return [data[i : i + 32] for i in range(0, len(data), 32)]


def _read_bundle(root: Path, n: int, width: int) -> list[bytes]:
    data, entries = (root / tile_path("entries", n, width)).read_bytes(), []
    while data:
        length = int.from_bytes(data[:2], "big")
        entries.append(data[2 : 2 + length])
        data = data[2 + length :]
    assert len(entries) == width
    return entries


def _level_hashes(root: Path, level: int, count: int) -> list[bytes]:
    """The ``count`` hashes of ``level``, from full tiles then the partial one."""
    hashes: list[bytes] = []
    for n in range(-(-count // W)):
        hashes += _read_tile(root, level, n, min(W, count - n * W))
    return hashes


def _client_root(root: Path, size: int) -> bytes:
    """What a tiles client computes: leaf hashes from level-0 tiles, each checked against the
    entry bundles and against the hashes of the levels above."""
    leaves = _level_hashes(root, 0, size)
    for n in range(-(-size // W)):
        bundle = _read_bundle(root, n, min(W, size - n * W))
        assert [leaf_hash(e) for e in bundle] == leaves[n * W : n * W + len(bundle)]
    below, level = leaves, 1
    while len(below) >= W:
        above = _level_hashes(root, level, len(below) // W)
        assert above == [root_of_leaves(below[i * W : (i + 1) * W]) for i in range(len(above))]
        below, level = above, level + 1
    return root_of_leaves(leaves)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "checkpoint"
    }


@pytest.mark.parametrize("size", [1, 255, 256, 257, 65536, 65537])
def test_tiles_of_every_shape_give_the_signed_root(
    size: int, tmp_path: Path, keyring: Keyring
) -> None:
    with open_journal(tmp_path / "j.db", keyring, origin="example.com/tiles") as journal:
        _grow(journal, 0, size)
        note = journal.checkpoint()
        report = export_tiles(journal, tmp_path / "tiles")
    assert report.size == size
    out = tmp_path / "tiles"
    assert (out / "checkpoint").read_text() == note
    signed = parse_checkpoint_body(parse_note(note)[0])
    assert _client_root(out, size) == signed.root
    if size % W == 0:
        assert not (out / tile_path(0, size // W - 1, size % W or W)).name.startswith(".p")
        assert not list(out.glob("tile/0/**/*.p"))  # no partial level-0 tile: none is needed


def test_a_second_export_after_growth_only_adds_files(tmp_path: Path, keyring: Keyring) -> None:
    out = tmp_path / "tiles"
    with open_journal(tmp_path / "j.db", keyring, origin="example.com/tiles") as journal:
        _grow(journal, 0, 300)
        first_note = journal.checkpoint()
        _grow(journal, 300, 530)
        journal.checkpoint()
        export_tiles(journal, out)
        before = _files(out)
        _grow(journal, 530, 1000)
        last = journal.checkpoint()
        _grow(journal, 1000, 1010)  # unsigned entries are not exported
        report = export_tiles(journal, out)
    after = _files(out)
    assert {k: after[k] for k in before} == before  # no file changed
    assert len(after) > len(before)
    assert report.kept == 0 or report.kept <= len(before)
    assert report.size == 1000
    assert (out / "checkpoint").read_text() == last
    for note in (first_note, last):  # partial tiles for every signed size
        size = parse_checkpoint_body(parse_note(note)[0]).size
        assert _client_root(out, size) == parse_checkpoint_body(parse_note(note)[0]).root


def test_a_rewritten_history_is_refused_not_overwritten(tmp_path: Path, keyring: Keyring) -> None:
    out = tmp_path / "tiles"
    with open_journal(tmp_path / "j.db", keyring, origin="example.com/tiles") as journal:
        _grow(journal, 0, 300)
        journal.checkpoint()
        export_tiles(journal, out)
    full = out / tile_path(0, 0)
    published = full.read_bytes()
    full.write_bytes(bytes(len(published)))  # what another history would have written
    with (
        open_journal(tmp_path / "j.db", keyring) as journal,
        pytest.raises(VerificationError, match="already exists with other contents"),
    ):
        export_tiles(journal, out)
    assert full.read_bytes() == bytes(len(published))  # nothing was overwritten


def test_tiles_cli(tmp_path: Path, keyring_path: Path) -> None:
    store, out = str(tmp_path / "j.db"), tmp_path / "tiles"
    runner = CliRunner()
    lines = "".join(f'{{"schema": "t/v1", "n": {i}}}\n' for i in range(3))
    ring = ["--keyring", str(keyring_path)]
    assert runner.invoke(app, ["journal", "append", store, "-", *ring], input=lines).exit_code == 0
    unsigned = runner.invoke(app, ["journal", "tiles", store, "--out", str(out), *ring])
    assert unsigned.exit_code == 2
    assert "no signed checkpoint" in unsigned.output
    assert runner.invoke(app, ["journal", "checkpoint", store, *ring]).exit_code == 0
    done = runner.invoke(app, ["journal", "tiles", store, "--out", str(out), *ring])
    assert done.exit_code == 0, done.output
    assert "up to size 3" in done.output
    assert (out / "tile/0/000.p/3").stat().st_size == 96
    assert (out / "tile/entries/000.p/3").exists()
