"""The human audit loop: a stratified sample of a run for a person to label, and its labels read
back into a :class:`JudgeAudit` recorded with the run (docs/provenance.md, "Human audit").

The sample is drawn at random (a fixed seed) *within each judged stratum* (``yes``, ``no``,
``uncertain``), an equal share each, capped by the stratum's size: each stratum's share of true
refusals is then an unbiased estimate, and the run's true refusal count follows by weighting the
strata by their sizes (``_judge_error``). Rows are ordered with the prompts that flipped against
a reference run first, so that the labels a person gives first are the ones that decide a drift.

Flipped prompts the random sample missed are added after it as ``sampled=no`` rows: a person
labels them too, and ``label`` reports how often the judge was right on them
(``extra_checked``), but they never enter the rates (they were not drawn at random).

Sheet columns: ``id, category, expect, judged, p_refusal, flipped, sampled, response,
human_label``; the person fills ``human_label`` with ``refusal`` or ``compliance``
(``yes``/``no`` also read); blank rows are skipped. The stratum of a row is read from the run,
never from the sheet.
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
    "id", "category", "expect", "judged", "p_refusal", "flipped", "sampled", "response",
    "human_label",
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
    path: str | Path,
    sample: Sequence[JudgedResponse],
    flipped: Collection[str] = (),
    extra: Sequence[JudgedResponse] = (),
) -> Path:
    """Write the sample (``sampled=yes``) and ``extra`` rows (``sampled=no``: flipped prompts
    the random sample missed, labelled for the record but kept out of the rates) as a CSV sheet,
    flipped prompts first, with an empty ``human_label`` column."""
    target = Path(path)
    rows = [(o, "yes") for o in sample] + [(o, "no") for o in extra]
    rows.sort(key=lambda row: (row[0].id not in flipped, row[1] == "no", row[0].id))
    with target.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(SHEET_COLUMNS)
        for o, sampled in rows:
            writer.writerow(
                [_cell(o.id), _cell(o.category), str(o.expect), str(o.refused),
                 f"{o.p_refusal:.3f}", "yes" if o.id in flipped else "", sampled,
                 _cell(o.response or ""), ""]
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


def _rows(path: str | Path) -> list[tuple[str, dict[str, str]]]:
    """``(where, row)`` for every row of an audit sheet."""
    try:
        with Path(path).open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if not {"id", "human_label"} <= set(reader.fieldnames or ()):
                raise CalibrationError(
                    f"{path}: not an audit sheet (needs id and human_label columns)",
                    hint="Use the sheet written by `calibrate audit`.",
                )
            return [(f"{path}:{reader.line_num}", row) for row in reader]
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise CalibrationError(f"{path}: not a readable CSV sheet ({exc})") from None


def read_labels(run: CalibrationRun, path: str | Path) -> JudgeAudit:
    """The labelled rows of a sheet as a :class:`JudgeAudit` of ``run``: sampled rows give the
    per-stratum shares; labelled ``sampled=no`` rows only count in ``extra_checked``."""
    judged = {o.id: o for o in run.outcomes}
    counts: dict[str, list[int]] = {}
    checked = [0, 0]  # extra rows: the judge's best reading agreed, labelled
    seen: set[str] = set()
    for where, row in _rows(path):
        label = _label(row.get("human_label") or "", where)
        if label is None:
            continue
        ident = (row.get("id") or "").removeprefix("'")
        outcome = judged.get(ident)
        if outcome is None:
            raise CalibrationError(f"{where}: id {ident!r} is not in this run")
        if ident in seen:  # a repeated row would weigh one answer twice
            raise CalibrationError(
                f"{where}: id {ident!r} is labelled twice", hint="Keep one row per id."
            )
        seen.add(ident)
        if (row.get("sampled") or "yes").strip().lower() == "no":
            checked[0] += int(outcome.is_refusal == label)
            checked[1] += 1
            continue
        cell = counts.setdefault(str(outcome.refused), [0, 0])
        cell[0] += int(label)
        cell[1] += 1
    if not counts:
        raise CalibrationError(
            f"{path}: no sampled row is labelled", hint="Fill the human_label column."
        )
    strata = {str(label): sum(o.refused is label for o in run.outcomes) for label in Refused}
    labelled = {k: (v[0], v[1]) for k, v in counts.items()}
    return JudgeAudit(labelled, strata, format_timestamp(now_utc()), (checked[0], checked[1]))


def with_audit(run: CalibrationRun, audit: JudgeAudit) -> CalibrationRun:
    """The run with its ``judge_audit`` recorded (a drift verdict on it uses the corrections)."""
    return replace(run, extra={**dict(run.extra), "judge_audit": audit.to_dict()})
