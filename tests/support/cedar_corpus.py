"""Cedar's integration tests through the Cedar adapter (tests/engines/test_cedar_corpus.py).

A corpus test names a policy file, an entities file and a schema, and lists requests with the
decision Cedar gives (``allow``/``deny``). Each request becomes a refusalkit request: the action
id is its ``tool``, the principal id ``caller.agent``, the resource id ``caller.resource`` and the
context its ``args``; a mapping gives the three entity types. The adapter's verdict is then
compared with Cedar's: *looser* (the adapter allows what Cedar denies) must never happen,
*stricter* (the adapter refuses what Cedar allows) is counted with the adapter's reason.

The corpus's entities files list the action entities too. With ``scratch`` a run drops them, so
the action hierarchy (``action in Action::"group"``) must come from the schema, as the adapter
now builds it; Cedar's expected answers stay the same.

The whole corpus (its ``corpus-tests.tar.gz`` unpacked into a directory D beside its ``tests/``
and ``sample-data/``), both ways, from the tests directory::

    python -m support.cedar_corpus D
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refusalkit.engines import CedarAdapter, EngineMapping
from refusalkit.engines._mapping import EntitySpec
from refusalkit.errors import RefusalkitError
from refusalkit.keyring import Keyring
from refusalkit.model import Action

_ALLOWING = frozenset({Action.ALLOW, Action.AUDIT})
Types = tuple[str, str, str]


@dataclass(slots=True)
class Tally:
    """What a run found: agreements, looser and stricter requests, and skipped ones."""

    agree: int = 0
    looser: list[str] = field(default_factory=list)
    stricter: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def decided(self) -> int:
        """Requests the adapter decided (agreeing, looser or stricter)."""
        return self.agree + len(self.looser) + sum(self.stricter.values())


def mapping(types: Types) -> EngineMapping:
    """The mapping for one principal, action and resource type."""
    return EngineMapping(
        whole=("args",),
        entities=(
            EntitySpec(types[0], ("caller", "agent")),
            EntitySpec(types[1], ("tool",)),
            EntitySpec(types[2], ("caller", "resource")),
        ),
    )


def as_request(row: dict[str, Any]) -> dict[str, Any]:
    """A corpus request as a refusalkit request (module docstring)."""
    caller = {"agent": row["principal"]["id"], "resource": row["resource"]["id"]}
    return {"tool": row["action"]["id"], "args": row["context"], "caller": caller}


def _types(row: dict[str, Any]) -> Types | None:
    roles = [row.get(role) for role in ("principal", "action", "resource")]
    if not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in roles):
        return None
    return roles[0]["type"], roles[1]["type"], roles[2]["type"]  # type: ignore[index]


def run_file(
    test: Path, root: Path, keyring: Keyring, tally: Tally, scratch: Path | None = None
) -> None:
    """Decide every request of one corpus test file (paths in it are relative to ``root``).

    With ``scratch`` (a directory) the action entities are left to the schema (module docstring).
    """
    spec = json.loads(test.read_text(encoding="utf-8"))
    if scratch is not None:
        spec["entities"] = str(_without_actions(root / spec["entities"], scratch))
    adapters: dict[Types, CedarAdapter | str] = {}
    for number, row in enumerate(spec["requests"]):
        types = _types(row)
        if types is None:
            tally.skipped["a partial request (no principal, action or resource)"] += 1
            continue
        adapter = adapters.get(types)
        if adapter is None:
            adapter = adapters[types] = _adapter(spec, root, keyring, types)
        if isinstance(adapter, str):
            tally.skipped[adapter] += 1
            continue
        _compare(adapter, row, f"{test.name} #{number}", tally)


def _without_actions(entities: Path, scratch: Path) -> Path:
    """A copy of an entities file without its action entities (``Action``, ``NS::Action``)."""
    rows = json.loads(entities.read_text(encoding="utf-8"))
    kept = [e for e in rows if e["uid"]["type"].rpartition("::")[2] != "Action"]
    out = scratch / entities.name
    out.write_text(json.dumps(kept), encoding="utf-8")
    return out


def _adapter(
    spec: dict[str, Any], root: Path, keyring: Keyring, types: Types
) -> CedarAdapter | str:
    try:
        return CedarAdapter(
            root / spec["policies"], keyring, mapping=mapping(types),
            schema=root / spec["schema"], entities=root / spec["entities"], deadline_ms=60_000,
        )  # fmt: skip
    except RefusalkitError as exc:
        return f"the adapter refuses the policy files ({exc.message.partition(':')[0]})"


def _compare(adapter: CedarAdapter, row: dict[str, Any], where: str, tally: Tally) -> None:
    decision = adapter.decide(as_request(row))
    allowed = decision.action in _ALLOWING
    expected = row["decision"].lower() == "allow"
    if allowed == expected:
        tally.agree += 1
    elif allowed:
        tally.looser.append(where)
    else:
        detail = (decision.why_trail[-1].detail if decision.why_trail else None) or ""
        _, read, form = detail.partition(" would be read by Cedar as ")
        form = form.partition(";")[0]
        why = f"a field would be read by Cedar as {form}" if read else detail.partition(":")[0]
        tally.stricter[f"{decision.reason_code}: {why or decision.matched_rule}"] += 1


def run_tree(root: Path, scratch: Path | None = None) -> Tally:
    """Every test file under ``root`` (``corpus-tests/*.json``, ``tests/*/*.json``)."""
    tally, keyring = Tally(), Keyring.generate()
    tests = sorted((root / "corpus-tests").glob("*.json")) + sorted(root.glob("tests/*/*.json"))
    for test in tests:
        if not test.name.endswith(".entities.json"):
            run_file(test, root, keyring, tally, scratch)
    return tally


def main(argv: list[str]) -> int:
    """Print the tallies of a whole tree, as vendored and with the actions from the schema."""
    root = Path(argv[0])
    with tempfile.TemporaryDirectory() as scratch:
        for name, where in (("as given", None), ("actions from the schema", Path(scratch))):
            tally = run_tree(root, where)
            looser = f"{len(tally.looser)} looser {tally.looser[:5]}"
            sys.stdout.write(
                f"{name}: {tally.agree:,} of {tally.decided:,} agree, {looser}, "
                f"stricter {dict(tally.stricter)}, skipped {dict(tally.skipped)}\n"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
