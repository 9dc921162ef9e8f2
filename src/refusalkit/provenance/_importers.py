"""Importers for published calibration sets, and the bundled starter set.

XSTest (Röttger et al., NAACL 2024; CC-BY-4.0): ``xstest_prompts.csv`` with columns
``id, prompt, type, label, focus, note``. ``label`` safe → ``comply``, unsafe → ``refuse``;
``category`` is ``type``; ids become ``xstest-<id>``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from refusalkit.errors import CalibrationSetError
from refusalkit.provenance._set import CalibrationPrompt, CalibrationSet, Expect, parse_set

__all__ = ["PRESETS", "STARTER_SET_NAME", "import_table", "import_xstest", "starter_set"]

STARTER_SET_NAME = "starter-v1"
_XSTEST_LABELS = {"safe": Expect.COMPLY, "unsafe": Expect.REFUSE}
_XSTEST_COLUMNS = ("id", "prompt", "type", "label")


def _xstest_row(row: dict[str, str | None], where: str) -> CalibrationPrompt:
    values = {c: (row.get(c) or "").strip() for c in _XSTEST_COLUMNS}
    empty = [c for c, v in values.items() if not v]
    if empty:
        raise CalibrationSetError(f"{where}: empty column(s) {', '.join(empty)}")
    expect = _XSTEST_LABELS.get(values["label"])
    if expect is None:
        raise CalibrationSetError(
            f"{where}: unknown label {values['label']!r}",
            hint="XSTest labels are 'safe' or 'unsafe'.",
        )
    prompt = (row.get("prompt") or "").strip()
    return CalibrationPrompt(f"xstest-{values['id']}", prompt, values["type"], expect)


def import_xstest(path: str | Path) -> CalibrationSet:
    """Read XSTest's ``xstest_prompts.csv`` into a calibration set (see the module docstring)."""
    source = Path(path)
    try:
        with source.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in _XSTEST_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise CalibrationSetError(
                    f"{source}: not an XSTest prompts file "
                    f"(missing column(s) {', '.join(missing)})",
                    hint="Give xstest_prompts.csv from the XSTest repository.",
                )
            prompts = [_xstest_row(row, f"{source}:{reader.line_num}") for row in reader]
    except OSError as exc:
        raise CalibrationSetError(f"cannot read {source}: {exc.strerror or exc}") from None
    return CalibrationSet(tuple(prompts), name=str(source))


def starter_set() -> CalibrationSet:
    """The bundled starter set (``starter-v1``): 60+ prompts over 6+ categories, safe and unsafe."""
    text = (
        resources.files("refusalkit.provenance")
        .joinpath("data", "starter-v1.jsonl")
        .read_text("utf-8")
    )
    return parse_set(text, name=STARTER_SET_NAME)


# -- the generic importer and the published-set presets ------------------------------------------

_EXPECT_WORDS = {
    "comply": Expect.COMPLY, "safe": Expect.COMPLY, "benign": Expect.COMPLY, "0": Expect.COMPLY,
    "false": Expect.COMPLY, "refuse": Expect.REFUSE, "unsafe": Expect.REFUSE,
    "harmful": Expect.REFUSE, "1": Expect.REFUSE, "true": Expect.REFUSE,
}  # fmt: skip
PRESETS: dict[str, tuple[str, str]] = {
    # name: (file format, mapping); ``:value`` is a constant for every row
    "or-bench-hard": ("csv", "prompt=prompt,category=category,expect=:comply"),
    "or-bench-toxic": ("csv", "prompt=prompt,category=category,expect=:refuse"),
    "harmbench": ("csv", "prompt=Behavior,category=SemanticCategory,expect=:refuse,id=BehaviorID"),
}
"""Published sets beyond XSTest (docs/provenance.md, "Importing sets"):

- OR-Bench (Cui et al., "OR-Bench: An Over-Refusal Benchmark for Large Language Models", 2024):
  CSV with ``prompt, category``; the hard-1k / 80k files are seemingly toxic but safe prompts
  (``or-bench-hard``: comply), the toxic file is truly harmful (``or-bench-toxic``: refuse).
- HarmBench (Mazeika et al., "HarmBench: A Standardized Evaluation Framework for Automated Red
  Teaming and Robust Refusal", ICML 2024): behaviours CSV with ``Behavior, FunctionalCategory,
  SemanticCategory, Tags, ContextString, BehaviorID``; every behaviour should be refused; a
  non-empty ``ContextString`` is put before the behaviour, as HarmBench does.
"""


def _mapping(spec: str) -> dict[str, str]:
    pairs = [part.split("=", 1) for part in spec.split(",") if part.strip()]
    if any(len(p) != 2 for p in pairs):
        raise CalibrationSetError(
            f"cannot read --map {spec!r}", hint="Write prompt=COL,category=COL,expect=COL."
        )
    found = {k.strip(): v.strip() for k, v in pairs}
    unknown = sorted(set(found) - {"prompt", "category", "expect", "id"})
    missing = [k for k in ("prompt", "category", "expect") if k not in found]
    if unknown or missing:
        raise CalibrationSetError(
            f"--map {spec!r}: " + "; ".join(
                ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
                + ([f"missing {', '.join(missing)}"] if missing else [])
            ),
            hint="Keys: prompt, category, expect (required) and id; ':value' is a constant.",
        )  # fmt: skip
    return found


def _rows(source: Path, fmt: str) -> list[dict[str, Any]]:
    text = source.read_text(encoding="utf-8")
    if fmt == "csv":
        return list(csv.DictReader(text.splitlines()))
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise CalibrationSetError(f"{source}:{number}: not valid JSON ({exc})") from None
            if not isinstance(value, dict):
                raise CalibrationSetError(f"{source}:{number}: expected a JSON object")
            rows.append(value)
    return rows


def _cell(row: Mapping[str, Any], column: str, where: str) -> str:
    if column.startswith(":"):
        return column[1:]
    if column not in row:
        raise CalibrationSetError(
            f"{where}: no column {column!r}", hint=f"Columns here: {', '.join(map(str, row))}."
        )
    return str(row[column] if row[column] is not None else "").strip()


def _mapped(row: Mapping[str, Any], m: Mapping[str, str], n: int, where: str) -> CalibrationPrompt:
    word = _cell(row, m["expect"], where).lower()
    if word not in _EXPECT_WORDS:
        raise CalibrationSetError(
            f"{where}: cannot read expect {word!r}",
            hint="Use comply/refuse (or safe/unsafe, benign/harmful, 0/1).",
        )
    prompt = _cell(row, m["prompt"], where)
    context = str(row.get("ContextString") or "").strip()
    if context:
        prompt = f"{context}\n\n---\n\n{prompt}"
    ident = _cell(row, m["id"], where) if "id" in m else f"row-{n}"
    category = _cell(row, m["category"], where) or "uncategorised"
    if not prompt or not ident:
        raise CalibrationSetError(f"{where}: empty prompt or id")
    return CalibrationPrompt(ident, prompt, category, _EXPECT_WORDS[word])


def import_table(path: str | Path, fmt: str, mapping: str | None = None) -> CalibrationSet:
    """A CSV or JSONL table as a calibration set by ``mapping`` (``prompt=COL,category=COL,
    expect=COL[,id=COL]``), or a published set by name (``xstest`` or one of ``PRESETS``)."""
    source = Path(path)
    if fmt == "xstest":
        return import_xstest(source)
    if fmt in PRESETS:
        fmt, mapping = PRESETS[fmt][0], mapping or PRESETS[fmt][1]
    if fmt not in ("csv", "jsonl"):
        raise CalibrationSetError(
            f"unknown --format {fmt!r}",
            hint=f"Use csv, jsonl, xstest or {', '.join(PRESETS)}.",
        )
    if mapping is None:
        raise CalibrationSetError(
            "--map is needed for csv and jsonl",
            hint="e.g. --map prompt=text,category=topic,expect=label",
        )
    m = _mapping(mapping)
    try:
        rows = _rows(source, fmt)
    except OSError as exc:
        raise CalibrationSetError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CalibrationSetError(f"{source}: not UTF-8 text") from None
    prompts = tuple(_mapped(r, m, n, f"{source}:{n}") for n, r in enumerate(rows, start=1))
    return CalibrationSet(prompts, name=str(source))
