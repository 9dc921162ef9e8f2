"""Pack loading: schema validation with file, line and key; digest; compilation errors."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from refusalkit.decide import Pack, load_pack
from refusalkit.decide._pack import pack_digest
from refusalkit.errors import PolicyError
from refusalkit.examples import example_path
from refusalkit.model import canonical_json

GOOD = """\
policy: p
version: v1
rules:
  - id: ok
    effect: allow
    when: {tool: fs.read}
"""


def write(tmp_path: Path, text: str, name: str = "pack.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_pack(write(tmp_path, text))
    return info.value


def test_good_pack_loads(tmp_path: Path) -> None:
    pack = load_pack(write(tmp_path, GOOD))
    assert (pack.id, pack.version) == ("p", "v1")
    assert pack.ref.digest == pack.digest


def test_digest_is_sha256_of_the_canonical_form(tmp_path: Path) -> None:
    pack = load_pack(write(tmp_path, GOOD))
    data = yaml.safe_load(GOOD)
    assert pack.digest == "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()
    # the same pack as JSON, keys reordered, has the same digest
    reordered = {"rules": data["rules"], "version": "v1", "policy": "p"}
    as_json = load_pack(write(tmp_path, json.dumps(reordered, indent=3), "pack.json"))
    assert as_json.digest == pack.digest == pack_digest(data)
    changed = load_pack(write(tmp_path, GOOD.replace("fs.read", "fs.write")))
    assert changed.digest != pack.digest


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        (GOOD.replace("effect: allow", "effect: permit"), 5, "rules[0].effect", "permit"),
        (GOOD.replace("    when:", "    wen:"), 6, "rules[0].wen", "unknown key 'wen'"),
        (GOOD.replace("id: ok", "id: '@default'"), 4, "rules[0].id", "reserved"),
        (GOOD + "  - id: ok\n    effect: deny\n", 7, "rules[1].id", "duplicate id"),
        (GOOD.replace("version: v1", "version: 3"), 2, "version", "string"),
        (GOOD.replace("{tool: fs.read}", "{tool: {regex: '(a'}}"), 6, "rules[0].when.tool", "RE2"),
        (GOOD.replace("{tool: fs.read}", "{args.ip: {cidr: 10.0.0.300/8}}"), 6, None, "CIDR"),
        (
            GOOD.replace("{tool: fs.read}", "{tool: {glob: a, class: secret}}"),
            6,
            "class",
            "declared",
        ),
        (
            GOOD.replace("{tool: fs.read}", "{tool: {glob: a, prefix: b}}"),
            6,
            "rules[0].when",
            "one",
        ),
        (GOOD + "rules: []\n", 7, "rules", "duplicate key"),
        (GOOD.replace("rules:", "default: maybe\nrules:"), 3, "default", "maybe"),
    ],
)
def test_errors_name_file_line_and_key(
    tmp_path: Path, text: str, line: int, key: str | None, words: str
) -> None:
    error = load_error(tmp_path, text)
    assert error.file is not None
    assert error.file.endswith("pack.yaml")
    assert error.line == line, error.message
    if key is not None:
        assert key in (error.key or ""), error.message
    assert words in error.message
    assert str(tmp_path) in str(error)
    assert f":{line}:" in str(error)


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, "policy: p\nversion: [v1\nrules: []\n")
    assert error.line is not None
    assert error.line >= 2
    assert "YAML" in error.message


def test_bad_attestation_key(tmp_path: Path) -> None:
    text = GOOD + "attestation:\n  trusted_keys:\n    k1: 'c2hvcnQ='\n"
    error = load_error(tmp_path, text)
    assert (error.line, error.key) == (9, "attestation.trusted_keys.k1")
    assert "32 bytes" in error.message


def test_bad_tool_schema(tmp_path: Path) -> None:
    text = GOOD + "tools:\n  fs.read:\n    args: {type: objekt}\n"
    error = load_error(tmp_path, text)
    assert error.key is not None
    assert error.key.startswith("tools.fs.read.args")
    assert error.line == 9


def test_non_json_yaml_values_are_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, GOOD.replace("version: v1", "version: 2024-01-01"))
    assert error.line == 2


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such file"):
        load_pack(tmp_path / "nope.yaml")
    assert "empty" in load_error(tmp_path, "").message


def test_from_mapping_names_the_source() -> None:
    with pytest.raises(PolicyError) as info:
        Pack.from_mapping({"policy": "p", "version": "1"}, source="inline")
    assert info.value.file == "inline"
    assert "rules" in info.value.message


def test_from_mapping_copies_its_input() -> None:
    data = yaml.safe_load(GOOD)
    pack = Pack.from_mapping(data)
    data["rules"][0]["effect"] = "deny"
    assert pack.data["rules"][0]["effect"] == "allow"


def test_example_pack_summary() -> None:
    summary = load_pack(example_path("agent-tools.yaml")).summary()
    assert summary["stages"][:3] == ["@attestation", "@scope", "@schema"]
    assert summary["stages"][-2:] == ["rules", "@default"]
    assert summary["rules"] == sum(summary["rules_by_effect"].values()) > 10
    assert summary["field_classes"]["url"] == "reveal"
    assert summary["field_classes"]["credential-file"] == "redact"


def test_a_class_both_sensitive_and_revealed_is_a_load_error(tmp_path: Path) -> None:
    """``sensitive: true`` labels a class that must stay redacted; revealing it contradicts that."""
    pack = tmp_path / "p.yaml"
    pack.write_text(
        "policy: p\nversion: v1\nfield_classes:\n"
        "  secret: {sensitive: true, reveal: true}\n"
        "rules:\n  - id: r\n    effect: deny\n    when: {args.k: {glob: '*', class: secret}}\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_pack(pack)
    assert "field class 'secret' is both sensitive and reveal: true" in caught.value.message
    assert caught.value.line == 4
    pack.write_text(pack.read_text().replace("sensitive: true, ", ""))
    assert load_pack(pack).id == "p"


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("text", [GOOD, GOOD.replace("allow", "permit")])
def test_a_load_leaves_the_garbage_collector_as_it_found_it(
    tmp_path: Path, text: str, enabled: bool
) -> None:
    """The collector is held off during a load (``_pack.py``), and restored after it, whether
    the pack loads or not; one the caller had disabled stays disabled."""
    gc.enable() if enabled else gc.disable()
    try:
        with contextlib.suppress(PolicyError):
            load_pack(write(tmp_path, text))
        assert gc.isenabled() is enabled
        with pytest.raises(PolicyError):
            Pack.from_mapping({"policy": "p"})
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
