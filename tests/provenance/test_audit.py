"""The human audit loop through the CLI: stratified sheet, flipped first, labels recorded."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.errors import CalibrationError
from refusalkit.provenance import (
    CalibrationPrompt,
    CalibrationRun,
    CalibrationSet,
    CallableRunner,
    Expect,
    read_labels,
    run_calibration,
)

cli = CliRunner()
REFUSAL = "I'm sorry, but I can't help with that."
FORMULA = '=HYPERLINK("http://attacker.example/x","click")'
CSET = CalibrationSet(
    tuple(CalibrationPrompt(f"p{i:02d}", f"prompt {i}", "c", Expect.COMPLY) for i in range(40))
)


def _invoke(*args: str) -> Any:
    return cli.invoke(app, ["calibrate", *args])


def _run(tmp_path: Path, refuse: set[int], name: str, *, keep: bool = True) -> Path:
    def model(prompt: str) -> str:
        i = int(prompt.split()[1])
        return REFUSAL if i in refuse else (FORMULA if i == 30 else f"Sure: answer {i}.")

    run = run_calibration(
        CSET,
        CallableRunner(model, model=name),
        cache=tmp_path / "cache.sqlite3",
        include_responses=keep,
    )
    return run.write(tmp_path / f"{name}.json")


def _sheet(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_audit_then_label_records_the_judges_rates(tmp_path: Path) -> None:
    before = _run(tmp_path, set(range(10)), "m1")
    now = _run(tmp_path, set(range(20)), "m2")
    sheet = tmp_path / "sheet.csv"
    r = _invoke("audit", str(now), "--against", str(before), "--sample", "20", "--out", str(sheet))
    assert r.exit_code == 0, r.output
    rows = _sheet(sheet)
    sampled = [row for row in rows if row["sampled"] == "yes"]
    assert len(sampled) == 20
    assert {row["judged"] for row in sampled} == {"yes", "no"}
    assert sum(row["judged"] == "yes" for row in sampled) == 10  # equal share per stratum
    flipped = [row["flipped"] == "yes" for row in rows]
    assert flipped == sorted(flipped, reverse=True)  # flipped prompts first
    assert sum(flipped) == 10  # every flip is on the sheet, sampled or not
    assert all(row["flipped"] == "yes" for row in rows if row["sampled"] == "no")
    everything = tmp_path / "all.csv"
    assert _invoke("audit", str(now), "--sample", "40", "--out", str(everything)).exit_code == 0
    [formula] = [row for row in _sheet(everything) if row["id"] == "p30"]
    assert formula["response"] == "'" + FORMULA  # shown as text, never a live formula

    for row in rows:  # the person finds every judged "yes" right, and one sampled "no" wrong
        row["human_label"] = "refusal" if row["judged"] == "yes" else "compliance"
    [last_no] = [i for i, row in enumerate(rows) if row["sampled"] == "yes"][-1:]
    rows[last_no]["human_label"] = "refusal"
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    r = _invoke("label", str(now), str(sheet))
    assert r.exit_code == 0, r.output
    assert "precision: 100.0%" in r.stdout
    assert "recall:" in r.stdout
    audit = CalibrationRun.load(now).judge_audit
    assert audit is not None
    assert audit.labelled == {"yes": (10, 10), "no": (1, 10)}  # extra rows stay out
    assert audit.strata == {"yes": 20, "no": 20, "uncertain": 0}
    extra = len(rows) - 20
    assert audit.extra_checked == (extra, extra)
    if extra:
        assert f"the judge was right on {extra} of {extra}" in r.stdout
    assert json.loads(now.read_text())["judge_audit"]["rates"]["recall"][0] < 1.0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows.append(dict(rows[0])), "labelled twice"),
        (lambda rows: rows[0].update(id="p99"), "not in this run"),
        (lambda rows: rows[0].update(human_label="maybe"), "neither refusal nor compliance"),
    ],
)
def test_a_bad_sheet_is_rejected_with_the_row(tmp_path: Path, edit: Any, message: str) -> None:
    now = _run(tmp_path, set(range(20)), "m2")
    sheet = tmp_path / "sheet.csv"
    assert _invoke("audit", str(now), "--sample", "6", "--out", str(sheet)).exit_code == 0
    rows = _sheet(sheet)
    for row in rows:
        row["human_label"] = "refusal"
    edit(rows)
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    r = _invoke("label", str(now), str(sheet))
    assert r.exit_code == 2
    assert message in r.stderr
    assert CalibrationRun.load(now).judge_audit is None


def test_audit_needs_response_text(tmp_path: Path) -> None:
    bare = _run(tmp_path, {1}, "m3", keep=False)
    r = _invoke("audit", str(bare), "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 2
    assert "--include-responses" in r.stderr


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
def test_label_reads_any_bytes_with_a_clear_error_or_an_audit(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    base = tmp_path_factory.mktemp("lab")
    run = CalibrationRun.load(_run(base, {1, 2}, "m"))
    sheet = base / "sheet.csv"
    sheet.write_bytes(b"id,human_label,sampled\n" + data)
    try:
        labelled = sum(n for _, n in read_labels(run, sheet).labelled.values())
    except CalibrationError as exc:
        labelled, why = 1, exc.message
    else:
        why = "read"
    assert why
    assert labelled >= 1
