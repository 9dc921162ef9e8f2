"""The human audit loop: a stratified sample of a run for a person to label, and its labels read
back into a :class:`JudgeAudit` recorded with the run (docs/provenance.md, "Human audit").

The sample is drawn at random (a fixed seed) *within each judged stratum* (``yes``, ``no``,
``uncertain``), an equal share each, capped by the stratum's size: each stratum's share of true
refusals is then an unbiased estimate, and the run's true refusal count follows by weighting the
strata by their sizes (``_judge_error``). Rows are ordered with the prompts that flipped against
a reference run first, so that the labels a person gives first are the ones that decide a drift.

Sheet columns: ``id, category, expect, judged, p_refusal, flipped, response, human_label``; the
person fills ``human_label`` with ``refusal`` or ``compliance`` (``yes``/``no`` also read);
blank rows are skipped. The stratum of a row is read from the run, never from the sheet.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path

from refusalkit.errors import CalibrationError
from refusalkit.model import format_timestamp, now_utc
from refusalkit.provenance._judge_error import JudgeAudit
from refusalkit.provenance._judges import Refused
from refusalkit.provenance._run_record import CalibrationRun, JudgedResponse

__all__ = ["SHEET_COLUMNS", "audit_sample", "read_labels", "with_audit", "write_sheet"]

SHEET_COLUMNS = (
    "id", "category", "expect", "judged", "p_refusal", "flipped", "response", "human_label",
)  # fmt: skip
_LABELS = {"refusal": True, "yes": True, "refused": True, "compliance": False, "no": False}


def audit_sample(
    run: CalibrationRun, size: int, *, flipped: Collection[str] = (), seed: int = 0
) -> list[JudgedResponse]:
    """``size`` outcomes, stratified by judged label, flipped prompts first."""
    if size < 1:
        raise CalibrationError("the audit sample must hold at least one prompt")
    if any(o.response is None for o in run.outcomes):
        raise CalibrationError(
            "this run kept no response text, so there is nothing for a person to read",
            hint="Rerun with `calibrate run --include-responses` (the cache makes it cheap).",
        )
    strata = {label: [o for o in run.outcomes if o.refused is label] for label in Refused}
    rng = random.Random(seed)  # noqa: S311 (sampling, not cryptography)
    chosen: list[JudgedResponse] = []
    remaining = size
    smallest_first = sorted(strata, key=lambda k: len(strata[k]))
    for left, label in zip(range(len(strata), 0, -1), smallest_first, strict=True):
        take = min(len(strata[label]), remaining // left)
        chosen += rng.sample(strata[label], take)
        remaining -= take
    return sorted(chosen, key=lambda o: (o.id not in flipped, o.id))


def write_sheet(
    path: str | Path, sample: Sequence[JudgedResponse], flipped: Collection[str] = ()
) -> Path:
    """Write the sample as a CSV sheet with an empty ``human_label`` column."""
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(SHEET_COLUMNS)
        for o in sample:
            writer.writerow(
                [_cell(o.id), _cell(o.category), str(o.expect), str(o.refused),
                 f"{o.p_refusal:.3f}", "yes" if o.id in flipped else "", _cell(o.response or ""),
                 ""]
            )  # fmt: skip
    return target


def _cell(text: str) -> str:
    """Neutralise spreadsheet formulas (CWE-1236): a model's answer that starts with ``=``,
    ``+``, ``-``, ``@``, tab or CR would run as a formula when the sheet is opened; a leading
    apostrophe makes spreadsheets show it as text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _label(value: str, where: str) -> bool | None:
    text = value.strip().lower()
    if not text:
        return None
    if text not in _LABELS:
        raise CalibrationError(
            f"{where}: human_label {value!r} is neither refusal nor compliance",
            hint="Write refusal or compliance (or leave the cell blank to skip the row).",
        )
    return _LABELS[text]


def read_labels(run: CalibrationRun, path: str | Path) -> JudgeAudit:
    """The labelled rows of a sheet as a :class:`JudgeAudit` of ``run``."""
    judged = {o.id: o.refused for o in run.outcomes}
    counts: dict[str, list[int]] = {}
    seen: set[str] = set()
    try:
        with Path(path).open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if not {"id", "human_label"} <= set(reader.fieldnames or ()):
                raise CalibrationError(
                    f"{path}: not an audit sheet (needs id and human_label columns)",
                    hint="Use the sheet written by `calibrate audit`.",
                )
            for row in reader:
                where = f"{path}:{reader.line_num}"
                label = _label(row.get("human_label") or "", where)
                if label is None:
                    continue
                ident = (row.get("id") or "").removeprefix("'")
                stratum = judged.get(ident)
                if stratum is None:
                    raise CalibrationError(f"{where}: id {ident!r} is not in this run")
                if ident in seen:  # a repeated row would weigh one answer twice
                    raise CalibrationError(
                        f"{where}: id {ident!r} is labelled twice", hint="Keep one row per id."
                    )
                seen.add(ident)
                cell = counts.setdefault(str(stratum), [0, 0])
                cell[0] += int(label)
                cell[1] += 1
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not counts:
        raise CalibrationError(f"{path}: no row is labelled", hint="Fill the human_label column.")
    strata = {str(label): sum(r is label for r in judged.values()) for label in Refused}
    labelled = {k: (v[0], v[1]) for k, v in counts.items()}
    return JudgeAudit(labelled, strata, format_timestamp(now_utc()))


def with_audit(run: CalibrationRun, audit: JudgeAudit) -> CalibrationRun:
    """The run with its ``judge_audit`` recorded (a drift verdict on it uses the corrections)."""
    return replace(run, extra={**dict(run.extra), "judge_audit": audit.to_dict()})
