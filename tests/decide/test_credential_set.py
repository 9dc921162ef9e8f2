"""The bundled packs' credential-file set: derived from the vendored public lists, and pinned.

The vendored sources are pinned by SHA-256 (an update is a deliberate change, reviewed with the
derivation in ``credential_sources``); both bundled packs must hold exactly the derived set, and
every source signature is either derived or left out with a reason.
"""

from __future__ import annotations

import hashlib

import pytest
import re2

from refusalkit.decide import load_pack
from refusalkit.examples import example_path
from support.credential_sources import EXCLUDED, VECTORS, derive, gitleaks, gitrob

PINNED = {
    "gitrob-signatures.json": "67064487370a3ac3ae99cfb72eedea1fbb9f1c7bdc09cf5d0a515620e1d3e04d",
    "gitleaks-path-rules.json": "114e58656544914679bd15c559247f0e64d27d6096e2d02a3788ea2b4f5884cb",
    "LICENSE-gitrob.txt": "2a6a74cf93e9ea5d9980c354dac214c6396c16be39a46d082e7793376fcfdc1f",
    "LICENSE-gitleaks.txt": "e3884b252b3bfc045e55be43a34d1e80da070bc6f804ac95bf4660e97d62ebc6",
}
PACKS = ["agent-tools.yaml", "mcp-filesystem.yaml"]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_vendored_sources_are_pinned(name: str) -> None:
    digest = hashlib.sha256((VECTORS / name).read_bytes()).hexdigest()
    assert digest == PINNED[name]


def test_the_sources_are_the_versions_the_packs_name() -> None:
    assert len(gitrob()) == 91
    assert [rule["id"] for rule in gitleaks()] == ["pkcs12-file"]
    for name in PACKS:
        source = load_pack(example_path(name)).data["sets"]["credential-files"]["source"]
        assert "gitrob v2.0.0-beta-6-g7be4c53 (MIT)" in source
        assert "gitleaks b58d3f10 (MIT)" in source
    notices = example_path("THIRD-PARTY-NOTICES.md").read_text(encoding="utf-8")
    assert "Michael Henriksen" in notices
    assert "Zachary Rice" in notices


@pytest.mark.parametrize("name", PACKS)
def test_both_packs_hold_exactly_the_derived_set(name: str) -> None:
    values = load_pack(example_path(name)).data["sets"]["credential-files"]["values"]
    assert values == derive()


def test_every_signature_is_derived_or_left_out_with_a_reason() -> None:
    matches = {signature["match"] for signature in gitrob()}
    assert set(EXCLUDED) <= matches  # no reason names a signature the source lacks
    assert all(reason for reason in EXCLUDED.values())
    assert len(derive()) >= len(matches) - len(EXCLUDED)


def test_every_derived_regex_is_re2_and_case_insensitive() -> None:
    for pattern in derive():
        re2.compile(pattern)
        assert pattern.startswith("(?i)")


@pytest.mark.parametrize(
    "path",
    [
        "/home/dev/.ssh/id_ecdsa",
        "/w/infra/terraform.tfstate",
        "/w/credentials.json",
        "/w/certs/server.key",
        "/w/certs/bundle.pfx",
        "/home/dev/.pgpass",
        "/w/.git/config",
        "/w/.env.production",
        "/home/dev/.aws/credentials",
        "/w/keepass.kdbx",
    ],
)
def test_the_set_names_the_files_attackers_read(path: str) -> None:
    assert any(re2.search(pattern, path) for pattern in derive())


@pytest.mark.parametrize(
    "path", ["/w/docs/credentials-guide.md", "/w/src/keys.py", "/w/docs/password-policy.md"]
)
def test_the_set_leaves_documents_and_sources_alone(path: str) -> None:
    assert not any(re2.search(pattern, path) for pattern in derive())
