"""Several writer processes at once, and writers killed with SIGKILL: nothing acknowledged is lost,
indices are gapless and unique, and the log verifies (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

WRITER = Path(__file__).with_name("journal_writer.py")


def _spawn(store: str, keyring_path: Path, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), store, str(keyring_path), tag, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _expected(ack: dict[str, Any]) -> list[bytes]:
    """The entries a writer's acknowledgement promises (journal_writer.record)."""
    tag, batch = ack["tag"], ack["batch"]
    return [
        canonical_json({"schema": "refusalkit.test/v1", "tag": tag, "batch": batch, "k": k})
        for k in range(ack["count"])
    ]


def _check_acks(store: str, keyring: Keyring, acks: list[dict[str, Any]]) -> int:
    with open_journal(store, keyring) as journal:
        size = journal.size()
        for ack in acks:
            got = journal.entries(ack["first"], ack["first"] + ack["count"])
            assert got == _expected(ack), f"acknowledged batch {ack} lost or changed"
        journal.checkpoint()
        report = journal.verify()
        assert report.size == size
    return size


@pytest.mark.slow
def test_concurrent_writers(store_url: str, keyring: Keyring, keyring_path: Path) -> None:
    with open_journal(store_url, keyring, origin="example.com/test"):
        pass
    writers = [_spawn(store_url, keyring_path, f"w{n}", 25) for n in range(4)]
    acks = []
    for proc in writers:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        acks += [json.loads(line) for line in out.splitlines()]
    assert len(acks) == 100
    size = _check_acks(store_url, keyring, acks)
    covered = sorted(i for ack in acks for i in range(ack["first"], ack["first"] + ack["count"]))
    assert covered == list(range(size)), "indices must be gapless and each assigned once"
    with open_journal(store_url, keyring) as journal:
        tags = {record["tag"] for _, record in journal.query(schema="refusalkit.test/v1")}
    assert tags == {"w0", "w1", "w2", "w3"}


@pytest.mark.slow
def test_sigkill_loses_nothing_acknowledged(
    store_url: str, keyring: Keyring, keyring_path: Path
) -> None:
    rng = random.Random(20261130)
    with open_journal(store_url, keyring, origin="example.com/test"):
        pass
    acks: list[dict[str, Any]] = []
    for round_number in range(20):
        proc = _spawn(store_url, keyring_path, f"crash{round_number}", -1)
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the writer is up and appending
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        lines = [first, *rest.splitlines()]
        acks += [json.loads(line) for line in lines if line.strip().endswith("}")]
    assert len(acks) >= 20
    size = _check_acks(store_url, keyring, acks)
    assert size >= sum(ack["count"] for ack in acks)


@pytest.mark.slow
def test_verify_while_another_process_appends(
    store_url: str, keyring: Keyring, keyring_path: Path
) -> None:
    with open_journal(store_url, keyring, origin="example.com/test") as journal:
        journal.append([{"schema": "refusalkit.test/v1", "seed": True}])
        journal.checkpoint()
    proc = _spawn(store_url, keyring_path, "busy", -1)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        with open_journal(store_url, keyring) as journal:
            sizes = [journal.verify().size for _ in range(5)]
        assert sizes == sorted(sizes)
        assert sizes[-1] > 1
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_a_checkpoint_signed_by_another_writer_between_reads_is_the_anchor(
    store_url: str, keyring: Keyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers of one journal without a signer state take no lock; when the other signs
    right after this one found no checkpoint, that checkpoint must read as the anchor, not as
    a deleted one ("the store says this journal was signed before")."""
    with (
        open_journal(store_url, keyring, origin="example.com/test") as mine,
        open_journal(store_url, keyring, origin="example.com/test") as other,
    ):
        mine.append([{"schema": "refusalkit.test/v1", "k": 0}])
        store_type = type(mine._store)
        read = store_type.latest_checkpoint
        fired: list[bool] = []

        def then_the_other_signs(self: Any) -> tuple[int, str] | None:
            found = read(self)
            if self is mine._store and not fired:
                fired.append(True)
                other.checkpoint()
            return found

        monkeypatch.setattr(store_type, "latest_checkpoint", then_the_other_signs)
        note = mine.checkpoint()
        assert fired
        assert note == other.latest_checkpoint()
