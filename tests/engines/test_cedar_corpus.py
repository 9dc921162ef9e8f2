"""The Cedar adapter against Cedar's own integration tests (in data/cedar-integration-tests).

The vendored rows are a selection of the public cedar-integration-tests corpus (its
ATTRIBUTION.md says which, from which commit, under which licence). Every request runs through
the adapter: it must never allow what Cedar denies; where it refuses what Cedar allows, the
refusal must be one of those the adapter makes by design (docs/design/engines.md, Fail-closed
cases), and the agreement figure is the one docs/engines.md states.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from support.cedar_corpus import Tally, run_tree

DATA = Path(__file__).resolve().parent / "data" / "cedar-integration-tests"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "engines.md"
SUMS = "SHA256SUMS"
SUMS_DIGEST = "dd1c849dca10f6d458157312c8413f88e93c71e2f189badc2ec77241e0ac8da9"
OURS = frozenset({SUMS, "ATTRIBUTION.md"})
BY_DESIGN = (
    "unavailable: a field would be read by Cedar as an entity reference (a __entity escape)",
    "unavailable: a field would be read by Cedar as an extension value (an __extn escape)",
    "input-rejected: malformed request",  # an integer beyond ±(2**53 - 1): not recordable
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_vendored_files_are_pinned() -> None:
    """Every vendored file is the one ATTRIBUTION.md describes, byte for byte, and no other."""
    assert _digest(DATA / SUMS) == SUMS_DIGEST
    listed = {}
    for line in (DATA / SUMS).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    on_disk = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()}
    assert on_disk - OURS == set(listed)
    assert {name: _digest(DATA / name) for name in listed} == listed


@pytest.fixture(scope="module")
def tallies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tally]:
    """The vendored requests as vendored, and again with the action entities left to the schema."""
    scratch = tmp_path_factory.mktemp("entities")
    return {"as vendored": run_tree(DATA), "actions from the schema": run_tree(DATA, scratch)}


@pytest.mark.parametrize("run", ["as vendored", "actions from the schema"])
def test_the_adapter_is_never_looser_than_cedar(tallies: dict[str, Tally], run: str) -> None:
    tally = tallies[run]
    assert tally.looser == []
    assert not tally.skipped  # every vendored request is one the adapter can express
    assert tally.decided > 600
    for reason, count in sorted(tally.stricter.items()):
        print(f"{run}: stricter than Cedar on {count}: {reason}")  # the report (pytest -s)
    assert all(reason.startswith(BY_DESIGN) for reason in tally.stricter)


def test_the_agreement_is_the_one_the_docs_state(tallies: dict[str, Tally]) -> None:
    """Both runs agree alike (the schema supplies the action hierarchy the entities held)."""
    vendored, derived = tallies["as vendored"], tallies["actions from the schema"]
    assert (derived.agree, derived.stricter) == (vendored.agree, vendored.stricter)
    stated = f"{vendored.agree:,} of the {vendored.decided:,} vendored requests"
    assert stated in DOCS.read_text(encoding="utf-8")
