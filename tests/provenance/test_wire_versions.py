"""Wire versions: v2 baselines and drift reports are written; v1 ones (written before outcomes
became yes / no / uncertain) still load, verify from their journaled bytes, and drift against a v2
run (docs/design/provenance.md, "Baseline" and "Drift")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import CalibrationError, VerificationError
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from refusalkit.provenance import (
    Baseline,
    CalibrationRun,
    CallableRunner,
    HaltReason,
    Refused,
    Verdict,
    compare,
    record_baseline,
    require_baseline,
    run_calibration,
    starter_set,
)
from refusalkit.provenance._baseline import journal_record


def _refuses(prompt: str) -> bool:
    return "kill" in prompt or "hack" in prompt


def _run(tmp_path: Path, refuse_all: bool = False) -> CalibrationRun:
    def answer(prompt: str) -> str:
        refused = refuse_all or _refuses(prompt)
        return "I can't help with that." if refused else "Sure, here it is."

    cache = tmp_path / ("cache-all" if refuse_all else "cache")
    return run_calibration(starter_set(), CallableRunner(answer, model="toy"), cache=cache)


def _v1_record(run: CalibrationRun) -> dict[str, Any]:
    """A ``refusalkit.baseline/v1`` record, by hand in the v1 shape: boolean ``refused``, no
    ``p_refusal``/``confidence``, no ``uncertain_share``."""
    prompts = {p.id: p for p in starter_set()}
    outcomes = [
        {
            "id": p.id,
            "category": p.category,
            "expect": str(p.expect),
            "refused": _refuses(p.prompt),
            "detail": "keyword",
            "response_sha256": "sha256:" + "0" * 64,
        }
        for p in prompts.values()
    ]
    refused = sum(_refuses(p.prompt) for p in prompts.values())
    return {
        "schema": "refusalkit.baseline/v1",
        "baseline_id": "01890000-0000-7000-8000-000000000001",
        "recorded_at": "2026-01-02T03:04:05Z",
        "run_id": "01890000-0000-7000-8000-000000000002",
        "model": "toy",
        "endpoint": "callable",
        "judge": run.judge.to_dict(),
        "calibration_prompt_set_hash": starter_set().hash,
        "calibration_set_name": "starter",
        "sampling": {},
        "baseline_refusal_rate": refused / len(outcomes),
        "baseline_refusal_rate_interval": [0.0, 1.0],
        "refusal_category_distribution": {},
        "outcomes": outcomes,
        "started_at": "2026-01-02T03:00:00Z",
        "finished_at": "2026-01-02T03:04:00Z",
    }


def _journaled_v1_file(tmp_path: Path, keyring: Keyring, run: CalibrationRun) -> Path:
    """A v1 baseline appended to a journal and written as BASELINE.json, as v1 code did."""
    record = _v1_record(run)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        _, receipt = journal_record(journal, record)
    path = tmp_path / "BASELINE.json"
    data = {
        "schema": "refusalkit.baseline-file/v1",
        "baseline": record,
        "receipt": receipt.to_dict(),
    }
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return path


def test_new_records_are_v2(tmp_path: Path, keyring: Keyring) -> None:
    run = _run(tmp_path)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        baseline = record_baseline(run, journal)
    assert baseline.record["schema"] == "refusalkit.baseline/v2"
    assert {o["refused"] for o in baseline.record["outcomes"]} <= {"yes", "no", "uncertain"}
    assert baseline.to_file()["schema"] == "refusalkit.baseline-file/v1"
    assert compare(baseline, run).to_dict()["schema"] == "refusalkit.drift-report/v2"


def test_a_v1_baseline_loads_verifies_and_drifts_against_a_v2_run(
    tmp_path: Path, keyring: Keyring
) -> None:
    current = _run(tmp_path)
    loaded = Baseline.load(_journaled_v1_file(tmp_path, keyring, current))
    loaded.verify(keyring=keyring)  # its journaled bytes are what they are: the receipt holds
    assert loaded.record["schema"] == "refusalkit.baseline/v1"
    by_id = {o.id: o for o in loaded.outcomes}
    for o in current.outcomes:  # boolean refused reads as yes / no, with p 1 / 0
        assert by_id[o.id].refused is (Refused.YES if o.is_refusal else Refused.NO)
        assert by_id[o.id].p_refusal == (1.0 if o.is_refusal else 0.0)

    same = compare(loaded, current)
    assert same.verdict is Verdict.STABLE
    assert same.flips == ()
    drifted = compare(loaded, _run(tmp_path, refuse_all=True))
    assert drifted.verdict is Verdict.MORE_RESTRICTIVE
    assert drifted.to_dict()["schema"] == "refusalkit.drift-report/v2"
    assert drifted.to_dict()["baseline"]["baseline_id"] == loaded.baseline_id


def test_a_tampered_v1_baseline_still_fails(tmp_path: Path, keyring: Keyring) -> None:
    path = _journaled_v1_file(tmp_path, keyring, _run(tmp_path))
    data = json.loads(path.read_text("utf-8"))
    data["baseline"]["outcomes"][0]["refused"] = "yes"  # "upgraded" in place: new bytes
    with pytest.raises(VerificationError):
        Baseline.from_file(data).verify(keyring=keyring)


def test_an_unknown_baseline_version_is_refused() -> None:
    data = {
        "schema": "refusalkit.baseline-file/v1",
        "baseline": {"schema": "refusalkit.baseline/v9"},
    }
    with pytest.raises(CalibrationError, match=r"refusalkit\.baseline/v1"):
        Baseline.from_file(data)


def test_require_baseline_reads_v1_baselines_and_v1_drift_reports(
    tmp_path: Path, keyring: Keyring
) -> None:
    run = _run(tmp_path)
    record = _v1_record(run)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        journal_record(journal, record)
        assert require_baseline("toy", starter_set(), 10**9, journal=journal).proceed
        halt = {"action": "HALT", "code": "drifted", "reason": "refusal rate went up"}
        journal_record(
            journal,
            {
                "schema": "refusalkit.drift-report/v1",
                "baseline": {"kind": "baseline", "baseline_id": record["baseline_id"]},
                "directive": halt,
            },
        )
        directive = require_baseline("toy", starter_set(), 10**9, journal=journal)
    assert not directive.proceed
    assert directive.code is HaltReason.DRIFTED


def test_the_dashboard_lists_baselines_and_drift_reports_of_both_versions(
    tmp_path: Path, keyring: Keyring
) -> None:
    from refusalkit.server._dashboard import gather  # noqa: PLC0415 (server internals)

    run = _run(tmp_path)
    old = _v1_record(run)
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        journal_record(journal, old)
        journal_record(journal, {"schema": "refusalkit.drift-report/v1", "report_id": "old"})
        new = record_baseline(run, journal)
        report = compare(new, run).to_dict()
        journal_record(journal, report)
        data = gather(journal)
    assert [r["baseline_id"] for _, r in data.baselines] == [new.baseline_id, old["baseline_id"]]
    assert [r["report_id"] for _, r in data.drift] == [report["report_id"], "old"]
