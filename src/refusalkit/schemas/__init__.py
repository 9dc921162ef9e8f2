"""The published JSON Schemas: decisions (``refusalkit.decision/v1``) and policy packs (v1).

They ship inside the package so a consumer can validate records without refusalkit's code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DECISION_SCHEMA_FILE", "PACK_SCHEMA_FILE", "SCHEMAS_DIR", "load_schema"]

SCHEMAS_DIR = Path(__file__).resolve().parent
DECISION_SCHEMA_FILE = SCHEMAS_DIR / "decision-v1.schema.json"
PACK_SCHEMA_FILE = SCHEMAS_DIR / "policy-pack-v1.schema.json"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A bundled schema by file stem, e.g. ``load_schema("decision-v1")``."""
    path = SCHEMAS_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise FileNotFoundError(f"no bundled schema {name!r} in {SCHEMAS_DIR}")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
