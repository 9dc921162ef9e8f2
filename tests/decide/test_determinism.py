"""Determinism: same request, pack and key → byte-identical decision apart from id and time."""

from __future__ import annotations

import json

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json


def stable_bytes(decision_dict: dict[str, object]) -> bytes:
    data = dict(decision_dict)
    data.pop("decision_id")
    data.pop("decided_at")
    return canonical_json(data)


def test_same_inputs_same_bytes(keyring: Keyring) -> None:
    lines = example_path("requests.jsonl").read_text(encoding="utf-8").splitlines()
    first = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring)
    second = DecisionPoint(load_pack(example_path("agent-tools.yaml")), keyring)  # fresh caches
    for number, line in enumerate(lines, 1):
        a = first.decide_line(line, line_number=number).to_dict()
        b = first.decide_line(line, line_number=number).to_dict()  # warm caches
        c = second.decide_line(line, line_number=number).to_dict()
        assert stable_bytes(a) == stable_bytes(b) == stable_bytes(c), number
        assert a["decision_id"] != b["decision_id"]
        assert json.dumps(a["why_trail"]) == json.dumps(c["why_trail"])


def test_another_key_gives_other_tokens_same_verdicts(keyring: Keyring) -> None:
    pack = load_pack(example_path("agent-tools.yaml"))
    line = example_path("requests.jsonl").read_text(encoding="utf-8").splitlines()[3]
    a = DecisionPoint(pack, keyring).decide_line(line)
    b = DecisionPoint(pack, Keyring.generate()).decide_line(line)
    assert (a.action, a.reason_code, a.matched_rule) == (b.action, b.reason_code, b.matched_rule)
    assert a.request_digest != b.request_digest
    assert [s.value for s in a.why_trail] != [s.value for s in b.why_trail]


def test_rotated_key_names_its_id(keyring: Keyring) -> None:
    rotated = keyring.rotate_redaction()
    pack = load_pack(example_path("agent-tools.yaml"))
    d = DecisionPoint(pack, rotated).decide({"tool": "fs.read", "args": {"path": "/x"}})
    assert d.request_digest.startswith(f"hmac-sha256:{rotated.redaction_active}:")
    assert rotated.redaction_active != keyring.redaction_active
