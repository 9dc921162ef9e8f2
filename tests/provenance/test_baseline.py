"""Baselines in the journal: receipts that verify offline, tampering, and require_baseline."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import pytest

from refusalkit.errors import VerificationError
from refusalkit.journal import open_journal, verify_receipt
from refusalkit.keyring import Keyring
from refusalkit.provenance import (
    Baseline,
    CalibrationRun,
    CallableRunner,
    HaltReason,
    compare,
    record_baseline,
    require_baseline,
    run_calibration,
    starter_set,
)
from refusalkit.provenance._baseline import BASELINE_SCHEMA, journal_record
from refusalkit.provenance._drift import DRIFT_SCHEMA


def _answer(prompt: str) -> str:
    return (
        "I can't help with that." if "kill" in prompt or "hack" in prompt else "Sure, here it is."
    )


def _run(tmp_path: Path, answer=_answer) -> CalibrationRun:  # type: ignore[no-untyped-def]
    return run_calibration(
        starter_set(), CallableRunner(answer, model="toy"), cache=tmp_path / "cache"
    )


def test_baseline_receipt_verifies_offline_and_fails_when_tampered(
    tmp_path: Path, keyring: Keyring
) -> None:
    run = _run(tmp_path)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        baseline = record_baseline(run, journal)
        [(index, stored)] = list(journal.query(schema=BASELINE_SCHEMA))
    assert stored == dict(baseline.record)
    assert baseline.index == index
    record = baseline.record
    assert record["schema"] == BASELINE_SCHEMA
    assert record["model"] == "toy"
    assert record["judge"] == {"id": "keyword", "version": "3"}
    assert record["calibration_prompt_set_hash"] == starter_set().hash
    assert record["baseline_refusal_rate"] == run.refusal_rate
    assert set(record["refusal_category_distribution"]) == set(starter_set().categories)
    assert len(record["outcomes"]) == len(starter_set())
    assert all("response" not in o for o in record["outcomes"])

    path = baseline.write(tmp_path / "BASELINE.json")
    loaded = Baseline.load(path)  # offline: only the file and the public key
    loaded.verify(public_key=keyring.public_key_bytes())
    loaded.verify(keyring=keyring)
    with pytest.raises(VerificationError, match="no trusted journal key") as info:
        loaded.verify()  # the key inside the file is never trusted by itself
    assert "--public-key" in (info.value.hint or "")

    data = json.loads(path.read_text())
    data["baseline"]["baseline_refusal_rate"] = 0.0
    tampered = Baseline.from_file(data)
    with pytest.raises(VerificationError):
        tampered.verify(public_key=keyring.public_key_bytes())
    with pytest.raises(VerificationError):
        loaded.verify(public_key=Keyring.generate().public_key_bytes())
    data = json.loads(path.read_text())
    data["receipt"]["hashes"] = ["00" * 32, *data["receipt"]["hashes"]]
    with pytest.raises(VerificationError):
        Baseline.from_file(data).verify(keyring=keyring)


def _resigned(baseline: Baseline, tmp_path: Path) -> tuple[Baseline, Keyring]:
    """The same record journaled by someone else: a file consistent under a foreign key."""
    foreign = Keyring.generate()
    with open_journal(tmp_path / "foreign.db", foreign) as journal:
        _, receipt = journal_record(journal, baseline.record)
    return Baseline(baseline.record, receipt), foreign


def test_a_baseline_resigned_with_another_key_fails(tmp_path: Path, keyring: Keyring) -> None:
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        genuine = record_baseline(_run(tmp_path), journal)
    forged, foreign = _resigned(genuine, tmp_path)
    forged.verify(public_key=foreign.public_key_bytes())  # consistent under its own key
    genuine.verify(keyring=keyring)
    genuine.verify(public_key=keyring.public_key_bytes())
    with pytest.raises(VerificationError, match="not a trusted journal key"):
        forged.verify(keyring=keyring)
    with pytest.raises(VerificationError, match="not a trusted journal key"):
        forged.verify(public_key=keyring.public_key_bytes())
    rotated = keyring.rotate_signing()
    genuine.verify(keyring=rotated)  # old signing keys stay trusted after a rotation
    with pytest.raises(VerificationError, match="not a trusted journal key"):
        forged.verify(keyring=rotated)


def test_require_baseline_halts_on_a_foreign_key(tmp_path: Path, keyring: Keyring) -> None:
    foreign = Keyring.generate()
    store = tmp_path / "journal.db"
    with open_journal(store, keyring) as journal:
        record_baseline(_run(tmp_path), journal)
        assert require_baseline("toy", starter_set(), 3600, journal=journal).proceed
        assert require_baseline(
            "toy", starter_set(), 3600, journal=journal, keyring=keyring
        ).proceed
        halts = [
            require_baseline("toy", starter_set(), 3600, journal=journal, keyring=foreign),
            require_baseline(
                "toy", starter_set(), 3600, journal=journal, public_key=foreign.public_key_bytes()
            ),
        ]
        for halt in halts:
            assert halt.code is HaltReason.RECEIPT_INVALID, halt.reason
            assert "not a trusted journal key" in halt.reason
    halt = require_baseline("toy", starter_set(), 3600, journal=store, keyring=foreign)
    assert halt.code is HaltReason.RECEIPT_INVALID, halt.reason


def test_drift_report_is_journaled_with_a_receipt(tmp_path: Path, keyring: Keyring) -> None:
    run = _run(tmp_path)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        baseline = record_baseline(run, journal)
        report = compare(baseline, _run(tmp_path)).to_dict()
        index, receipt = journal_record(journal, report)
        [(found, stored)] = list(journal.query(schema=DRIFT_SCHEMA))
    assert found == index
    assert stored["baseline"]["baseline_id"] == baseline.baseline_id
    verify_receipt(stored, receipt, public_key=keyring.public_key_bytes())


def test_require_baseline_directives(tmp_path: Path, keyring: Keyring) -> None:
    cset = starter_set()
    store = tmp_path / "journal.db"
    with open_journal(store, keyring) as journal:
        none = require_baseline("toy", cset, dt.timedelta(days=7), journal=journal)
        assert none.code is HaltReason.NO_BASELINE
        assert not none.proceed

        baseline = record_baseline(_run(tmp_path), journal)
        ok = require_baseline("toy", cset, dt.timedelta(days=7), journal=journal)
        assert ok.proceed, ok.reason
        assert ok.baseline_index == baseline.index
        assert ok.line().startswith("PROCEED: ")
        assert (
            require_baseline("other-model", cset, 3600, journal=journal).code
            is HaltReason.NO_BASELINE
        )
        assert (
            require_baseline("toy", "sha256:00", 3600, journal=journal).code
            is HaltReason.NO_BASELINE
        )

        later = dt.datetime.now(dt.UTC) + dt.timedelta(days=8)
        stale = require_baseline("toy", cset, dt.timedelta(days=7), journal=journal, now=later)
        assert stale.code is HaltReason.STALE

        wrong_key = Keyring.generate().public_key_bytes()
        bad = require_baseline("toy", cset.hash, 3600, journal=journal, public_key=wrong_key)
        assert bad.code is HaltReason.RECEIPT_INVALID

        # a drift report recorded against this baseline says HALT
        drifted = compare(baseline, _run(tmp_path, lambda p: "I won't help with that."))
        assert not drifted.directive.proceed
        journal_record(journal, drifted.to_dict())
        halt = require_baseline("toy", cset, 3600, journal=journal)
        assert halt.code is HaltReason.DRIFTED
        assert "latest drift report" in halt.reason

        # a stable report afterwards lets the agent proceed again
        journal_record(journal, compare(baseline, _run(tmp_path)).to_dict())
        assert require_baseline("toy", cset, 3600, journal=journal).proceed

    # by store path and keyring
    assert require_baseline("toy", cset, 3600, journal=store, keyring=keyring).proceed


def test_require_baseline_detects_a_tampered_store(tmp_path: Path, keyring: Keyring) -> None:
    store = tmp_path / "journal.db"
    with open_journal(store, keyring) as journal:
        record_baseline(_run(tmp_path), journal)
    db = sqlite3.connect(store)  # the journal's SQLite layout: journal_entry(idx, data, ...)
    (data,) = db.execute("SELECT data FROM journal_entry WHERE idx = 0").fetchone()
    forged = bytes(data).replace(
        b'"baseline_refusal_rate":', b'"baseline_refusal_rate":0,"was":', 1
    )
    assert forged != bytes(data)
    db.execute("UPDATE journal_entry SET data = ? WHERE idx = 0", (forged,))
    db.commit()
    db.close()
    with open_journal(store, keyring) as journal:
        directive = require_baseline("toy", starter_set(), 3600, journal=journal)
    assert directive.code is HaltReason.RECEIPT_INVALID, directive.reason


@pytest.mark.postgres
def test_baseline_in_a_postgres_journal(
    tmp_path: Path, keyring: Keyring, postgres_url: str
) -> None:
    run = _run(tmp_path)
    with open_journal(postgres_url, keyring) as journal:
        baseline = record_baseline(run, journal)
        assert require_baseline("toy", starter_set(), 3600, journal=journal).proceed
    Baseline.load(baseline.write(tmp_path / "B.json")).verify(public_key=keyring.public_key_bytes())
    directive = require_baseline("toy", starter_set(), 3600, journal=postgres_url, keyring=keyring)
    assert directive.proceed
    assert directive.baseline_index == baseline.index
