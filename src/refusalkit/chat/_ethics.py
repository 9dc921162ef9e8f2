"""Ethics packs: per-deployment JSON commitments above the safety floor (docs/design/chat.md).

A pack (``refusalkit.ethics-pack/v1``) lists commitments, each bound to a predicate from the
registry, and opts commitments into refusal (``refusal_commitments``) or hedging
(``hedge_commitments``); a commitment in both is a load error naming it. Commitments in neither
are checked and recorded but change nothing the user sees. A pack that does not load may fall back
to the bundled default with a logged warning (``load_ethics_pack_or_default``): it is
configuration above the floor, unlike the safety pack.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from refusalkit.chat._predicates import ETHICS_PREDICATES
from refusalkit.chat._surface import Identity
from refusalkit.chat._verdict import EthicsVerdict, PredicateResult, Turn
from refusalkit.errors import EthicsPackError
from refusalkit.model import PolicyRef, canonical_json

__all__ = [
    "DEFAULT_ETHICS_PACK_PATH",
    "ETHICS_PACK_SCHEMA",
    "Commitment",
    "EthicsPack",
    "check_ethics",
    "default_ethics_pack",
    "load_ethics_pack",
    "load_ethics_pack_or_default",
]

log = logging.getLogger("refusalkit.chat")

ETHICS_PACK_SCHEMA = "refusalkit.ethics-pack/v1"
DEFAULT_ETHICS_PACK_PATH = Path(__file__).resolve().parent / "packs" / "ethics-default.json"

_ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}
_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "id", "version", "commitments"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": ETHICS_PACK_SCHEMA},
        "id": {"type": "string", "minLength": 1},
        "version": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "identity": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "surface_preferences": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "soft_hedge": {"type": "string", "minLength": 1},
                        "strong_hedge": {"type": "string", "minLength": 1},
                    },
                },
            },
        },
        "commitments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "predicate"],
                "additionalProperties": False,
                "properties": {
                    "id": _ID,
                    "predicate": {"enum": sorted(ETHICS_PREDICATES)},
                    "description": {"type": "string"},
                },
            },
        },
        "refusal_commitments": {"type": "array", "items": _ID, "uniqueItems": True},
        "hedge_commitments": {"type": "array", "items": _ID, "uniqueItems": True},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(_JSON_SCHEMA)


@dataclass(frozen=True, slots=True)
class Commitment:
    """One commitment: its id (the ``ethics:<id>`` tag) and the registry predicate it uses."""

    id: str
    predicate: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class EthicsPack:
    """A validated ethics pack."""

    ref: PolicyRef
    commitments: tuple[Commitment, ...]
    refusal_commitments: frozenset[str]
    hedge_commitments: frozenset[str]
    identity: Identity
    source: str

    @classmethod
    def from_mapping(cls, data: Any, *, source: str = "<memory>") -> EthicsPack:
        """Validate and build a pack; raises ``EthicsPackError`` naming the problem."""
        errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
            raise EthicsPackError(f"{source}: {errors[0].message} (at {where})")
        commitments = tuple(
            Commitment(c["id"], c["predicate"], c.get("description", ""))
            for c in data["commitments"]
        )
        refusal, hedge = _opt_ins(data, commitments, source)
        digest = "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()
        ref = PolicyRef(data["id"], data["version"], digest)
        return cls(ref, commitments, refusal, hedge, _identity(data), source)


def _opt_ins(
    data: Mapping[str, Any], commitments: tuple[Commitment, ...], source: str
) -> tuple[frozenset[str], frozenset[str]]:
    ids = [c.id for c in commitments]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise EthicsPackError(f"{source}: commitment {duplicates[0]!r} is defined twice")
    refusal = frozenset(data.get("refusal_commitments", ()))
    hedge = frozenset(data.get("hedge_commitments", ()))
    unknown = sorted((refusal | hedge) - set(ids))
    if unknown:
        raise EthicsPackError(f"{source}: {unknown[0]!r} is opted in but is not a commitment")
    both = sorted(refusal & hedge)
    if both:
        raise EthicsPackError(
            f"{source}: commitment {both[0]!r} is in both refusal_commitments and "
            "hedge_commitments; a commitment either refuses or hedges",
            hint=f"Remove {both[0]!r} from one of the two lists.",
        )
    return refusal, hedge


def _identity(data: Mapping[str, Any]) -> Identity:
    ident = data.get("identity", {})
    prefs = ident.get("surface_preferences", {})
    return Identity(
        ident.get("name", "assistant"), prefs.get("soft_hedge"), prefs.get("strong_hedge")
    )


def load_ethics_pack(path: str | Path) -> EthicsPack:
    """Load and validate an ethics pack file; raises ``EthicsPackError``."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EthicsPackError(f"cannot read the ethics pack {source}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        msg = f"{source}: not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise EthicsPackError(msg) from exc
    return EthicsPack.from_mapping(data, source=str(source))


def default_ethics_pack() -> EthicsPack:
    """The bundled default ethics pack."""
    return load_ethics_pack(DEFAULT_ETHICS_PACK_PATH)


def load_ethics_pack_or_default(path: str | Path | None) -> EthicsPack:
    """The pack at ``path``; on any load error the default pack, with a logged warning."""
    if path is None:
        return default_ethics_pack()
    try:
        return load_ethics_pack(path)
    except EthicsPackError as exc:
        log.warning("ethics pack rejected, using the default pack instead: %s", exc.message)
        return default_ethics_pack()


def check_ethics(pack: EthicsPack, turn: Turn) -> EthicsVerdict:
    """Run every commitment's predicate on one turn."""
    results = []
    for c in pack.commitments:
        try:
            upheld, checkable, evidence = ETHICS_PREDICATES[c.predicate](
                turn.input, turn.articulation
            )
        except Exception as exc:  # noqa: BLE001 - fail closed, like a safety boundary
            upheld, checkable = False, True
            evidence = {"error": f"the commitment could not be checked ({type(exc).__name__})"}
        results.append(PredicateResult(c.id, upheld, checkable, evidence))
    return EthicsVerdict(pack.ref, tuple(results), pack.refusal_commitments, pack.hedge_commitments)
