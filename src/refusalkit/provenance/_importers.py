"""Importers for published calibration sets, and the bundled starter set.

XSTest (Röttger et al., NAACL 2024; CC-BY-4.0): ``xstest_prompts.csv`` with columns
``id, prompt, type, label, focus, note``. ``label`` safe → ``comply``, unsafe → ``refuse``;
``category`` is ``type``; ids become ``xstest-<id>``.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

from refusalkit.errors import CalibrationSetError
from refusalkit.provenance._set import CalibrationPrompt, CalibrationSet, Expect, parse_set

__all__ = ["STARTER_SET_NAME", "import_xstest", "starter_set"]

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
