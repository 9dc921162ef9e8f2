"""Calibration sets: JSONL ``{id, prompt, category, expect}`` records and their hash
(docs/design/provenance.md).

The set hash is SHA-256 over the RFC 8785 (JCS) form of the JSON array of the records sorted by
``id``; it names the set in every run, baseline and drift report, so runs of different sets are
never compared by accident.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from refusalkit.errors import CalibrationSetError
from refusalkit.model import canonical_json

__all__ = ["CalibrationPrompt", "CalibrationSet", "Expect", "load_set", "parse_set", "set_hash"]

_FIELDS = ("id", "prompt", "category", "expect")


class Expect(StrEnum):
    """What a well-behaved model should do with a prompt."""

    COMPLY = "comply"
    REFUSE = "refuse"


@dataclass(frozen=True, slots=True)
class CalibrationPrompt:
    """One prompt of a calibration set."""

    id: str
    prompt: str
    category: str
    expect: Expect

    def to_dict(self) -> dict[str, str]:
        """The JSONL record form."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "category": self.category,
            "expect": str(self.expect),
        }


def set_hash(prompts: Iterable[CalibrationPrompt]) -> str:
    """``sha256:<hex>`` of the RFC 8785 form of the records sorted by id.

    See docs/design/provenance.md.
    """
    records = [p.to_dict() for p in sorted(prompts, key=lambda p: p.id)]
    return "sha256:" + hashlib.sha256(canonical_json(records)).hexdigest()


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    """An ordered, non-empty set of prompts with unique ids; ``hash`` names it."""

    prompts: tuple[CalibrationPrompt, ...]
    name: str = "<memory>"

    def __post_init__(self) -> None:
        _check_prompts(self.prompts, self.name)

    @property
    def hash(self) -> str:
        """The set hash (docs/design/provenance.md)."""
        return set_hash(self.prompts)

    @property
    def categories(self) -> dict[str, int]:
        """Prompt count per category, sorted by category."""
        return dict(sorted(Counter(p.category for p in self.prompts).items()))

    @property
    def expects(self) -> dict[str, int]:
        """Prompt count per expected behaviour."""
        counts = Counter(str(p.expect) for p in self.prompts)
        return {str(e): counts.get(str(e), 0) for e in Expect}

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self) -> Iterator[CalibrationPrompt]:
        return iter(self.prompts)

    def to_jsonl(self) -> str:
        """The set as JSONL text, one record a line, in set order."""
        return "".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in self.prompts)

    def write(self, path: str | Path) -> Path:
        """Write the set as JSONL (UTF-8) and return the path."""
        target = Path(path)
        target.write_text(self.to_jsonl(), encoding="utf-8")
        return target


def _check_prompts(prompts: tuple[CalibrationPrompt, ...], name: str) -> None:
    if not prompts:
        raise CalibrationSetError(
            f"{name}: the calibration set is empty",
            hint="Add at least one {id, prompt, category, expect} line.",
        )
    seen: set[str] = set()
    for p in prompts:
        if p.id in seen:
            raise CalibrationSetError(
                f"{name}: duplicate id {p.id!r}", hint="Every id must be unique."
            )
        seen.add(p.id)


def _record(value: Any, where: str) -> CalibrationPrompt:
    if not isinstance(value, dict):
        raise CalibrationSetError(f"{where}: expected a JSON object, got {type(value).__name__}")
    missing = [f for f in _FIELDS if f not in value]
    if missing:
        raise CalibrationSetError(f"{where}: missing field(s) {', '.join(missing)}")
    extra = sorted(set(value) - set(_FIELDS))
    if extra:
        raise CalibrationSetError(f"{where}: unknown field(s) {', '.join(extra)}")
    for f in ("id", "prompt", "category"):
        if not isinstance(value[f], str) or not value[f].strip():
            raise CalibrationSetError(f"{where}: field {f!r} must be a non-empty string")
    try:
        expect = Expect(value["expect"])
    except ValueError:
        raise CalibrationSetError(
            f"{where}: unknown expect {value['expect']!r}",
            hint="expect must be 'comply' or 'refuse'.",
        ) from None
    return CalibrationPrompt(value["id"], value["prompt"], value["category"], expect)


def parse_set(text: str, *, name: str = "<memory>") -> CalibrationSet:
    """Parse JSONL text into a set; blank lines are skipped; errors name the line."""
    prompts: list[CalibrationPrompt] = []
    for number, line in enumerate(text.split("\n"), start=1):  # JSONL: only \n ends a line
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CalibrationSetError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        prompts.append(_record(value, where))
    return CalibrationSet(tuple(prompts), name=name)


def load_set(path: str | Path) -> CalibrationSet:
    """Load a JSONL calibration set from a file."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalibrationSetError(
            f"cannot read calibration set {source}: {exc.strerror or exc}",
            hint="Check the path; `refusalkit calibrate import-xstest` makes a set from XSTest.",
        ) from None
    except UnicodeDecodeError:
        raise CalibrationSetError(f"{source}: not UTF-8 text") from None
    return parse_set(text, name=str(source))
