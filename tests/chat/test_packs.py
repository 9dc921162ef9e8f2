"""The fixed safety pack (fail closed) and ethics packs (validated, fallback to the default)."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from refusalkit.chat import ChatRuntime, EthicsPack, load_ethics_pack
from refusalkit.chat._ethics import DEFAULT_ETHICS_PACK_PATH, load_ethics_pack_or_default
from refusalkit.chat._safety import SAFETY_BOUNDARIES, SAFETY_PACK_PATH, load_safety_pack
from refusalkit.errors import EthicsPackError, SafetyPackError
from refusalkit.examples import example_path


def test_bundled_safety_pack_loads_with_its_five_boundaries() -> None:
    pack = load_safety_pack()
    assert pack.boundaries == SAFETY_BOUNDARIES
    assert pack.ref.id == "refusalkit-safety"
    assert pack.ref.digest.startswith("sha256:")


def test_altered_safety_pack_copy_is_refused(tmp_path: Path) -> None:
    data = json.loads(SAFETY_PACK_PATH.read_text(encoding="utf-8"))
    data["boundaries"] = data["boundaries"][:4]  # drop a boundary
    altered = tmp_path / "safety-v1.json"
    altered.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(SafetyPackError, match="altered"):
        load_safety_pack(altered)
    with pytest.raises(SafetyPackError):
        ChatRuntime(safety_pack_path=altered)


def test_one_byte_change_is_refused(tmp_path: Path) -> None:
    raw = SAFETY_PACK_PATH.read_bytes()
    altered = tmp_path / "safety-v1.json"
    altered.write_bytes(raw + b" ")
    with pytest.raises(SafetyPackError):
        load_safety_pack(altered)
    exact = tmp_path / "copy.json"
    exact.write_bytes(raw)
    assert load_safety_pack(exact).ref == load_safety_pack().ref


def test_missing_safety_pack_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SafetyPackError, match="cannot read"):
        ChatRuntime(safety_pack_path=tmp_path / "gone.json")


def _default_data() -> dict[str, Any]:
    return json.loads(DEFAULT_ETHICS_PACK_PATH.read_text(encoding="utf-8"))


def test_default_and_example_ethics_packs_load() -> None:
    pack = load_ethics_pack(DEFAULT_ETHICS_PACK_PATH)
    assert {c.predicate for c in pack.commitments} == {
        "acknowledge_uncertainty",
        "no_dosage_instructions",
        "no_legal_verdicts",
        "disclose_ai_identity",
    }
    assert load_ethics_pack(example_path("chat-ethics-pack.json")).ref == pack.ref


def test_commitment_in_both_lists_is_a_load_error_naming_it() -> None:
    data = _default_data()
    data["hedge_commitments"].append("no_dosage_instructions")
    with pytest.raises(EthicsPackError, match=r"'no_dosage_instructions'.*both"):
        EthicsPack.from_mapping(data)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["commitments"].append({"id": "x", "predicate": "nope"}), "nope"),
        (lambda d: d.pop("commitments"), "commitments"),
        (lambda d: d["refusal_commitments"].append("ghost"), "ghost"),
        (lambda d: d["commitments"].append(dict(d["commitments"][0])), "defined twice"),
        (lambda d: d.update(schema="refusalkit.ethics-pack/v9"), "ethics-pack/v1"),
    ],
)
def test_invalid_ethics_packs_are_rejected(mutate: Any, message: str) -> None:
    data = copy.deepcopy(_default_data())
    mutate(data)
    with pytest.raises(EthicsPackError, match=message):
        EthicsPack.from_mapping(data)


def test_bad_ethics_pack_falls_back_to_default_with_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = tmp_path / "ethics.json"
    bad.write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="refusalkit.chat"):
        pack = load_ethics_pack_or_default(bad)
    assert pack.ref == load_ethics_pack(DEFAULT_ETHICS_PACK_PATH).ref
    assert any("using the default pack" in r.getMessage() for r in caplog.records)
    with pytest.raises(EthicsPackError, match="not JSON"):
        load_ethics_pack(bad)


def test_ethics_pack_digest_tracks_content() -> None:
    data = _default_data()
    one = EthicsPack.from_mapping(data)
    data["version"] = "v2"
    assert EthicsPack.from_mapping(data).ref.digest != one.ref.digest
