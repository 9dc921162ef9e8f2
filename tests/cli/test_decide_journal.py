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
