"""The published JSON Schemas (``refusalkit/schemas``) checked against real output of the models."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.schemas import load_schema


def validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def decisions() -> list[dict[str, Any]]:
    dp = DecisionPoint(load_pack(example_path("agent-tools.yaml")), Keyring.generate())
    lines = example_path("requests.jsonl").read_text(encoding="utf-8").splitlines()
    out = [dp.decide_line(line, line_number=n).to_dict() for n, line in enumerate(lines, 1)]
    out.append(dp.decide({"tool": "x", "args": {"n": 2**60}}).to_dict())
    return out


def test_schemas_are_valid_draft_2020_12() -> None:
    for name in ("decision-v1", "policy-pack-v1"):
        assert load_schema(name)["$schema"].endswith("2020-12/schema")
        validator(name)


def test_every_real_decision_validates(decisions: list[dict[str, Any]]) -> None:
    check = validator("decision-v1")
    actions = set()
    for decision in decisions:
        check.validate(decision)
        actions.add(decision["action"])
    assert actions == {"allow", "audit", "deny", "block"}
    assert any(s.get("missing") for d in decisions for s in d["why_trail"])


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("action",), "maybe"),
        (("reason_code",), "forbidden"),
        (("retryable",), True),  # policy-denied is not retryable
        (("decided_at",), "2026-01-01T00:00:00Z"),
        (("request_digest",), "sha256:abc"),
        (("decision_id",), "not-a-uuid"),
        (("schema",), "refusalkit.decision/v2"),
        (("why_trail", 0, "matched"), "yes"),
        (("policy", "digest"), "md5:00"),
    ],
)
def test_schema_rejects_what_the_model_never_writes(
    decisions: list[dict[str, Any]], path: tuple[Any, ...], value: Any
) -> None:
    denied = next(d for d in decisions if d["reason_code"] == "policy-denied")
    broken = copy.deepcopy(denied)
    target: Any = broken
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    assert not validator("decision-v1").is_valid(broken)


def test_allow_with_a_reason_code_is_invalid(decisions: list[dict[str, Any]]) -> None:
    allowed = copy.deepcopy(next(d for d in decisions if d["action"] == "allow"))
    allowed["reason_code"] = "policy-denied"
    assert not validator("decision-v1").is_valid(allowed)


def test_example_pack_validates_against_the_published_schema() -> None:
    data = yaml.safe_load(example_path("agent-tools.yaml").read_text(encoding="utf-8"))
    validator("policy-pack-v1").validate(data)
    data["rules"][0]["effect"] = "permit"
    assert not validator("policy-pack-v1").is_valid(data)


@pytest.mark.parametrize("code", ["approval-required", "rate-limited"])
def test_version_2_codes_validate_only_as_version_2(
    decisions: list[dict[str, Any]], code: str
) -> None:
    """Reason codes version 2 (docs/design/reason-codes.md): added codes need version 2."""
    check = validator("decision-v1")
    refused = next(copy.deepcopy(d) for d in decisions if d["action"] == "deny")
    refused.update(reason_code=code, retryable=True, reason_codes_version=2)
    check.validate(refused)
    assert not check.is_valid(dict(refused, reason_codes_version=1))
    assert not check.is_valid(dict(refused, retryable=False))
