"""``decide --journal`` and ``demo``: decisions land in a journal that verifies."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.cli._demo import demo_journal_path
from refusalkit.examples import example_path
from refusalkit.journal import open_journal, verify_receipt
from refusalkit.keyring import Keyring

runner = CliRunner()


def test_decide_journals_every_printed_decision(tmp_path: Path, keyring_path: Path) -> None:
    store = tmp_path / "j.db"
    args = ["decide", "--policy", str(example_path("agent-tools.yaml")), "--keyring"]
    source = str(example_path("requests.jsonl"))
    result = runner.invoke(app, [*args, str(keyring_path), "--journal", str(store), source])
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    requests = example_path("requests.jsonl").read_text().splitlines()
    assert len(printed) == len(requests)
    ring = Keyring.load(keyring_path)
    with open_journal(store, ring) as journal:
        assert journal.size() == len(printed)
        journaled = [json.loads(e) for e in journal.entries(0, journal.size())]
        assert [d["decision_id"] for d in journaled] == [d["decision_id"] for d in printed]
        assert journal.latest_checkpoint() is not None
        receipt = journal.receipt(len(printed) - 1)
        journal.verify()
    verify_receipt(printed[-1], receipt, public_key=ring.public_key_bytes())


def test_decide_appends_to_an_existing_journal(tmp_path: Path, keyring_path: Path) -> None:
    store = tmp_path / "j.db"
    line = json.dumps({"tool": "fs.read", "args": {"path": "/workspace/a"}})
    args = ["decide", "--policy", str(example_path("agent-tools.yaml"))]
    for _ in range(2):
        result = runner.invoke(
            app, [*args, "--keyring", str(keyring_path), "--journal", str(store), "-"], input=line
        )
        assert result.exit_code == 0, result.output
    with open_journal(store, Keyring.load(keyring_path)) as journal:
        assert journal.size() == 2
        assert journal.verify().checkpoints == 2


def test_demo_writes_and_verifies_its_journal() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "verified:" in result.stdout
    requests = example_path("requests.jsonl").read_text().splitlines()
    again = runner.invoke(app, ["demo"])
    assert again.exit_code == 0, again.output
    ring = Keyring.load(Path(demo_journal_path()).parent / "keyring.json")
    with open_journal(demo_journal_path(), ring) as journal:
        assert journal.size() == 2 * len(requests)
        assert journal.verify().checkpoints == 2


def _checkpoint_count(store: Path, ring: Keyring) -> int:
    with open_journal(store, ring, create=False) as journal:
        return len(journal.checkpoints())


def test_decide_refuses_to_sign_a_rolled_back_journal(tmp_path: Path, keyring_path: Path) -> None:
    """A store holder restores an old copy: `decide --journal` appends but signs nothing new.

    The signer state beside the keyring remembers the larger checkpoint; without it the
    restored store's own latest checkpoint would be the anchor and the fork would get signed.
    """
    store, backup = tmp_path / "j.db", tmp_path / "backup.db"
    line = json.dumps({"tool": "fs.read", "args": {"path": "/workspace/a"}})
    args = ["decide", "--policy", str(example_path("agent-tools.yaml"))]
    args += ["--keyring", str(keyring_path), "--journal", str(store), "-"]
    assert runner.invoke(app, args, input=line).exit_code == 0
    backup.write_bytes(store.read_bytes())
    assert runner.invoke(app, args, input=line).exit_code == 0
    store.write_bytes(backup.read_bytes())
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    refused = runner.invoke(app, args, input=line)
    assert refused.exit_code == 1, refused.output
    assert "does not extend the last checkpoint signed" in refused.output
    assert "Traceback" not in refused.output
    assert _checkpoint_count(store, Keyring.load(keyring_path)) == 1


def test_demo_refuses_to_sign_a_rolled_back_journal() -> None:
    assert runner.invoke(app, ["demo"]).exit_code == 0
    path = demo_journal_path()
    saved = path.read_bytes()
    assert runner.invoke(app, ["demo"]).exit_code == 0
    path.write_bytes(saved)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    refused = runner.invoke(app, ["demo"])
    assert refused.exit_code == 1, refused.output
    assert "does not extend the last checkpoint signed" in refused.output
    ring = Keyring.load(Path(path).parent / "keyring.json")
    assert _checkpoint_count(path, ring) == 1
