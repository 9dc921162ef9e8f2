"""gitleaks' default rules: shipped with their licence, pinned, compiled with RE2, run as gitleaks
runs them (keyword prefilter, secret group, entropy floor, allowlists)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from refusalkit.chat._detect import find_secrets
from refusalkit.chat._gitleaks import RULES_PATH, RULES_SHA256, load_rules, shannon_entropy
from refusalkit.errors import SafetyPackError

PINNED = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"


def test_the_rule_file_is_pinned_and_ships_with_its_licence() -> None:
    assert RULES_SHA256 == PINNED
    assert hashlib.sha256(RULES_PATH.read_bytes()).hexdigest() == PINNED
    licence = (RULES_PATH.parent / "LICENSE").read_text("utf-8")
    assert "MIT License" in licence
    assert "Zachary Rice" in licence
    assert PINNED in (RULES_PATH.parent / "ATTRIBUTION.txt").read_text("utf-8")


def test_every_rule_loads_and_compiles() -> None:
    rules = load_rules()
    assert len(rules.rules) == 217  # 222 rules; 5 apply only to file paths, which a turn lacks
    assert all(rule.rx is not None and rule.id for rule in rules.rules)
    assert {"generic-api-key", "private-key", "github-pat", "aws-access-token"} <= {
        r.id for r in rules.rules
    }


def test_an_altered_rule_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "gitleaks.toml"
    shutil.copy(RULES_PATH, copy)
    with copy.open("a", encoding="utf-8") as handle:
        handle.write('\n[[rules]]\nid = "allow-all"\nregex = "."\n')
    with pytest.raises(SafetyPackError, match="altered"):
        load_rules(copy)


def test_keywords_prefilter_the_rules() -> None:
    rules = load_rules()
    prose = "The quarterly report covers revenue, churn and hiring. " * 40
    assert len(rules.candidates(prose)) <= 3  # rules without keywords, and none of the 217
    assert {r.id for r in rules.candidates("ghp_ here")} >= {"github-pat"}


def test_entropy_floor_and_digit_rule_for_generic_secrets() -> None:
    rules = load_rules()
    low = "api_key = aaaaaaaaaaaaaaaaaaaa1"  # entropy far below generic-api-key's 3.5
    high = "api_key = q8Xz3Lm0Pw7Rt2Yv5Bn9"
    no_digit = "api_key = qXzLmPwRtYvBnKjHgFdS"
    assert shannon_entropy("aaaa") == 0.0
    assert [leak.rule for leak in rules.scan(low)] == []
    assert [leak.rule for leak in rules.scan(high)] == ["generic-api-key"]
    assert [leak.rule for leak in rules.scan(no_digit)] == []


def test_global_allowlist_stopwords_and_template_values() -> None:
    rules = load_rules()
    assert list(rules.scan("api_key = abcdefghijklmnopqrstuvwxyz0123")) == []  # stopword
    assert list(rules.scan('token = "${API_TOKEN_VALUE}"')) == []  # global allowlist regex


def test_a_provider_rule_only_gitleaks_knows_is_used() -> None:
    text = "DOPPLER_TOKEN=dp.pt.Kq7Zr2Xw9Lm4Pb8Nv3Tc6Yh1Jd5Gf0Sa2Qe7Wu4Ri9Ok"
    assert [f.kind for f in find_secrets(text)] == ["doppler-api-token"]
