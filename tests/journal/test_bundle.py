"""Export bundles: a forged bundle fails against a pinned key, however it was cut down."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusalkit.errors import VerificationError
from refusalkit.journal import (
    NoteVerifier,
    export_bundle,
    leaf_hash,
    open_journal,
    verify_bundle,
)
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

DecisionMaker = Callable[..., dict[str, Any]]
ORIGIN = "example.com/audit"


@pytest.fixture
def bundle(tmp_path: Path, keyring: Keyring, decision: DecisionMaker) -> Path:
    """A bundle of 10 decisions (all deny) with checkpoints at sizes 4 and 10."""
    with open_journal(tmp_path / "j.db", keyring, origin=ORIGIN) as journal:
        journal.append([decision(i) for i in range(4)])
        journal.checkpoint()
        journal.append([decision(i) for i in range(4, 10)])
        return export_bundle(journal, tmp_path / "audit.json")


def _pinned(keyring: Keyring) -> list[NoteVerifier]:
    return [NoteVerifier.for_key(ORIGIN, keyring.public_key_bytes())]


def _allow_entry_3(data: dict[str, Any]) -> None:
    """Rewrite entry 3 from deny to allow and fix its leaf hash, as a forger would."""
    record = json.loads(base64.b64decode(data["entries"][3]))
    assert record["action"] == "deny"
    forged = canonical_json({**record, "action": "allow", "reason_code": None})
    data["entries"][3] = base64.b64encode(forged).decode()
    data["leaf_hashes"][3] = leaf_hash(forged).hex()


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_untouched_bundle_verifies_with_the_pinned_key(bundle: Path, keyring: Keyring) -> None:
    report = verify_bundle(bundle, trusted=_pinned(keyring))
    assert (report.size, report.checkpoints, report.unsigned_entries) == (10, 2, 0)
    by_raw_key = verify_bundle(bundle, public_keys=[keyring.public_key_bytes()])
    assert by_raw_key.root == report.root


@pytest.mark.parametrize("cut", ["delete", "empty"])
def test_forged_entry_without_checkpoints_is_refused(
    bundle: Path, keyring: Keyring, cut: str
) -> None:
    def forge(data: dict[str, Any]) -> None:
        _allow_entry_3(data)
        data["consistency"] = []
        if cut == "delete":
            del data["checkpoints"]
        else:
            data["checkpoints"] = []

    _rewrite(bundle, forge)
    with pytest.raises(VerificationError, match="no checkpoint signed by a trusted key") as failed:
        verify_bundle(bundle, trusted=_pinned(keyring))
    assert failed.value.index == 0


def test_bundle_whose_checkpoints_stop_short_of_its_size_is_refused(
    bundle: Path, keyring: Keyring
) -> None:
    def keep_first(data: dict[str, Any]) -> None:
        data["checkpoints"] = data["checkpoints"][:1]  # size 4; entries 4..9 now vouched by none
        data["consistency"] = []
        record = json.loads(base64.b64decode(data["entries"][7]))
        forged = canonical_json({**record, "action": "allow"})
        data["entries"][7] = base64.b64encode(forged).decode()
        data["leaf_hashes"][7] = leaf_hash(forged).hex()

    _rewrite(bundle, keep_first)
    with pytest.raises(VerificationError, match="for its size 10") as failed:
        verify_bundle(bundle, trusted=_pinned(keyring))
    assert failed.value.index == 4


def test_bundle_signed_by_another_key_names_the_fix(bundle: Path) -> None:
    stranger = [NoteVerifier.for_key(ORIGIN, Keyring.generate().public_key_bytes())]
    with pytest.raises(VerificationError, match="signed by a key you did not pass") as failed:
        verify_bundle(bundle, trusted=stranger)
    assert failed.value.hint is not None
    assert "--public-key" in failed.value.hint


def test_empty_journal_exports_a_verifiable_bundle(tmp_path: Path, keyring: Keyring) -> None:
    with open_journal(tmp_path / "empty.db", keyring, origin=ORIGIN) as journal:
        path = export_bundle(journal, tmp_path / "empty.json")
    report = verify_bundle(path, trusted=_pinned(keyring))
    assert (report.size, report.checkpoints) == (0, 1)
