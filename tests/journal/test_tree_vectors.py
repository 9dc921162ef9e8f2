"""Every inclusion and consistency vector of transparency-dev/merkle (base + mutations).

Source and semantics: tests/vectors/tlog-vectors/ATTRIBUTION.md. ``wantErr`` must match on all.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import VerificationError
from refusalkit.journal import verify_consistency, verify_inclusion

DATA = Path(__file__).resolve().parents[1] / "vectors/tlog-vectors/transparency-dev-merkle/testdata"


def _cases(kind: str) -> list[Any]:
    files = sorted((DATA / kind).rglob("*.json"))
    return [
        pytest.param(json.loads(f.read_text()), id=str(f.relative_to(DATA / kind))) for f in files
    ]


def _b(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def _proof(vector: dict[str, Any]) -> list[bytes]:
    return [_b(p) for p in vector["proof"] or []]


def test_the_vectors_are_all_there() -> None:
    assert len(_cases("inclusion")) == 98
    assert len(_cases("consistency")) == 98


@pytest.mark.parametrize("vector", _cases("inclusion"))
def test_inclusion_vector(vector: dict[str, Any]) -> None:
    def run() -> None:
        verify_inclusion(
            vector["leafIdx"],
            vector["treeSize"],
            _b(vector["leafHash"]),
            _proof(vector),
            _b(vector["root"]),
        )

    if vector["wantErr"]:
        with pytest.raises(VerificationError):
            run()
    else:
        run()


@pytest.mark.parametrize("vector", _cases("consistency"))
def test_consistency_vector(vector: dict[str, Any]) -> None:
    def run() -> None:
        verify_consistency(
            vector["size1"],
            vector["size2"],
            _proof(vector),
            _b(vector["root1"]),
            _b(vector["root2"]),
        )

    if vector["wantErr"]:
        with pytest.raises(VerificationError):
            run()
    else:
        run()
