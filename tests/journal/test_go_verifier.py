"""An independent verifier: a small Go program on golang.org/x/mod/sumdb (note.Open,
tlog.CheckRecord, tlog.CheckTree, tlog.TileHashReader) checks refusalkit's checkpoints, proofs
and tiles. Built in GOPATH mode from Debian's golang-golang-x-mod-dev, with no network.

Skipped, with the reason, only where ``go`` or the x/mod sources are missing on a laptop; in CI
(``CI=true``) a missing toolchain fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from refusalkit.journal import (
    NoteVerifier,
    export_tiles,
    open_journal,
    parse_checkpoint_body,
    parse_note,
)
from refusalkit.keyring import Keyring

SOURCE = Path(__file__).parent / "go_verifier" / "main.go"
GOPATH = Path("/usr/share/gocode")


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = (
        "go is not installed"
        if shutil.which("go") is None
        else "golang-golang-x-mod-dev is not installed"
        if not (GOPATH / "src/golang.org/x/mod/sumdb/tlog").is_dir()
        else None
    )
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing}: .ci/run installs golang-go and golang-golang-x-mod-dev")
        pytest.skip(f"{missing} (apt-get install golang-go golang-golang-x-mod-dev)")
    work = tmp_path_factory.mktemp("go")
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOCACHE": str(work / "cache"),
        "GOPROXY": "off",
        "GOFLAGS": "",
    }
    binary = work / "verifier"
    built = subprocess.run(
        ["go", "build", "-o", str(binary), str(SOURCE)],
        cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    return binary


def _input(tmp_path: Path, keyring: Keyring, size: int) -> dict[str, object]:
    with open_journal(tmp_path / "j.db", keyring, origin="example.com/go") as journal:
        journal.append([{"schema": "t/v1", "n": i} for i in range(size // 3)])
        old = journal.checkpoint()
        journal.append([{"schema": "t/v1", "n": i} for i in range(size // 3, size)])
        note = journal.checkpoint()
        export_tiles(journal, tmp_path / "tiles")
        old_cp = parse_checkpoint_body(parse_note(old)[0])
        inclusions = [journal.inclusion_proof(i, size) for i in (0, 1, size // 2, size - 1)]
        consistency = journal.consistency_proof(old_cp.size, size)
        vkey = NoteVerifier.for_key(journal.origin, keyring.public_key_bytes()).vkey
    consistency["old_root"] = old_cp.root.hex()
    return {
        "vkey": vkey,
        "checkpoint": note,
        "tiles": str(tmp_path / "tiles"),
        "inclusions": inclusions,
        "consistencies": [consistency],
    }


def _run(binary: Path, tmp_path: Path, data: dict[str, object]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(data))
    return subprocess.run(
        [str(binary), str(path)], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("size", [7, 300, 65_537])
def test_go_agrees_on_checkpoints_proofs_and_tiles(
    verifier: Path, tmp_path: Path, keyring: Keyring, size: int
) -> None:
    done = _run(verifier, tmp_path, _input(tmp_path, keyring, size))
    assert done.returncode == 0, done.stderr
    assert f"ok example.com/go size {size}: 4 inclusion, 1 consistency, 3 from tiles" in done.stdout


def test_go_refuses_what_refusalkit_refuses(
    verifier: Path, tmp_path: Path, keyring: Keyring
) -> None:
    data = _input(tmp_path, keyring, 300)
    other = NoteVerifier.for_key("example.com/go", Keyring.generate().public_key_bytes()).vkey
    assert _run(verifier, tmp_path, {**data, "vkey": other}).returncode == 1
    bad = json.loads(json.dumps(data))
    bad["inclusions"][2]["leaf_hash"] = "00" * 32
    refused = _run(verifier, tmp_path, bad)
    assert refused.returncode == 1
    assert "CheckRecord" in refused.stderr
    tile = tmp_path / "tiles" / "tile/0/000"
    tile.write_bytes(bytes(len(tile.read_bytes())))
    assert "from tiles" in _run(verifier, tmp_path, data).stderr
