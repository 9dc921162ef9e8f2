"""``--engine KIND:SOURCE`` and its options, as one record, and opening the adapter it names.

The same record serves ``refusalkit decide`` and ``refusalkit serve`` (whose worker processes
rebuild it from JSON): ``cedar:POLICIES.cedar``, ``rego:DIR``, ``opa:URL``, ``agt:POLICY.yaml``,
with ``--mapping F`` for every kind, ``--query data.PKG.RULE`` for rego and opa (required), and
``--cedar-schema F`` / ``--cedar-entities F`` for cedar (docs/engines.md).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from refusalkit.engines._adapter import Adapter
from refusalkit.engines._agt import AgtAdapter
from refusalkit.engines._cedar import CedarAdapter
from refusalkit.engines._mapping import load_mapping
from refusalkit.engines._opa import OpaAdapter
from refusalkit.engines._rego import RegoAdapter
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring

__all__ = ["EngineKind", "EngineSpec", "open_engine"]


class EngineKind(enum.StrEnum):
    """The engines refusalkit can put behind its decision contract."""

    CEDAR = "cedar"
    REGO = "rego"
    OPA = "opa"
    AGT = "agt"


_USAGE = "Give --engine KIND:SOURCE with KIND one of cedar, rego, opa, agt (docs/engines.md)."


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """Which engine, where its policy is, and the options of that kind."""

    kind: EngineKind
    source: str
    mapping: str | None = None
    query: str | None = None
    cedar_schema: str | None = None
    cedar_entities: str | None = None

    @classmethod
    def parse(cls, engine: str, **options: str | None) -> EngineSpec:
        """``KIND:SOURCE`` plus options; raises ``UsageError`` for a combination that is wrong."""
        kind_text, colon, source = engine.partition(":")
        try:
            kind = EngineKind(kind_text)
        except ValueError:
            raise UsageError(f"unknown engine kind {kind_text!r}", hint=_USAGE) from None
        if not colon or not source:
            raise UsageError(f"--engine {engine!r} names no source", hint=_USAGE)
        spec = cls(kind, source, **options)
        spec.check()
        return spec

    def check(self) -> None:
        """Refuse options that the kind does not take, and a missing ``--query``."""
        queried = self.kind in (EngineKind.REGO, EngineKind.OPA)
        if queried and not self.query:
            raise UsageError(f"--engine {self.kind}: needs --query data.PKG.RULE", hint=_USAGE)
        if not queried and self.query:
            raise UsageError(f"--query is for rego and opa, not {self.kind}", hint=_USAGE)
        cedar_only = self.cedar_schema or self.cedar_entities
        if cedar_only and self.kind is not EngineKind.CEDAR:
            raise UsageError("--cedar-schema and --cedar-entities are for cedar", hint=_USAGE)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (for worker processes)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineSpec:
        """Rebuild from ``to_dict``."""
        return cls(**{**data, "kind": EngineKind(data["kind"])})


def open_engine(spec: EngineSpec, keyring: Keyring, *, deadline_ms: float = 50.0) -> Adapter:
    """The adapter ``spec`` names, loaded and checked (errors name file and line)."""
    mapping = load_mapping(spec.mapping) if spec.mapping else None
    if spec.kind is EngineKind.CEDAR:
        return CedarAdapter(
            spec.source, keyring, mapping=mapping, schema=spec.cedar_schema,
            entities=spec.cedar_entities, deadline_ms=deadline_ms,
        )  # fmt: skip
    if spec.kind is EngineKind.REGO:
        query = spec.query or ""
        return RegoAdapter(
            spec.source, keyring, query=query, mapping=mapping, deadline_ms=deadline_ms
        )
    if spec.kind is EngineKind.OPA:
        query = spec.query or ""
        return OpaAdapter(
            spec.source, keyring, query=query, mapping=mapping, deadline_ms=deadline_ms
        )
    return AgtAdapter(spec.source, keyring, mapping=mapping, deadline_ms=deadline_ms)
