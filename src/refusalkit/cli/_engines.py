"""``--engine KIND:SOURCE`` and its options, shared by ``decide`` and ``serve`` (docs/engines.md).

``decider`` gives what ``decide`` streams lines through: the built-in decision point for
``--policy``, or the adapter that ``--engine`` names. Exactly one of the two must be given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from refusalkit.cli._common import load_keyring
from refusalkit.decide import DecisionPoint, decide_lines, load_pack
from refusalkit.engines import EngineSpec, open_engine
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import Decision

__all__ = [
    "CedarEntitiesOption",
    "CedarSchemaOption",
    "EngineOption",
    "MappingOption",
    "QueryOption",
    "decider",
    "engine_spec",
]

_PANEL = "External engine"
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="Decide with an external engine instead of a pack: cedar:POLICIES.cedar, rego:DIR, "
        "opa:URL or agt:POLICY.yaml.",
        show_default=False,
        rich_help_panel=_PANEL,
    ),
]
MappingOption = Annotated[
    Path | None,
    typer.Option(help="YAML mapping of requests to the engine's input.", rich_help_panel=_PANEL),
]
QueryOption = Annotated[
    str | None,
    typer.Option(help="rego/opa: the decision document, data.PKG.RULE.", rich_help_panel=_PANEL),
]
CedarSchemaOption = Annotated[
    Path | None, typer.Option(help="cedar: a Cedar schema.", rich_help_panel=_PANEL)
]
CedarEntitiesOption = Annotated[
    Path | None, typer.Option(help="cedar: Cedar entities (JSON).", rich_help_panel=_PANEL)
]

Decider = Callable[[Iterable[bytes]], Iterator[tuple[int, Decision]]]


def engine_spec(
    engine: str | None,
    mapping: Path | None = None,
    query: str | None = None,
    cedar_schema: Path | None = None,
    cedar_entities: Path | None = None,
) -> EngineSpec | None:
    """The engine the options name, or None when ``--engine`` is not given (then none may be)."""
    if engine is None:
        if mapping or query or cedar_schema or cedar_entities:
            raise UsageError("--mapping, --query and --cedar-* need --engine")
        return None
    return EngineSpec.parse(
        engine,
        mapping=str(mapping) if mapping else None,
        query=query,
        cedar_schema=str(cedar_schema) if cedar_schema else None,
        cedar_entities=str(cedar_entities) if cedar_entities else None,
    )


def decider(
    policy: Path | None, spec: EngineSpec | None, keyring: Path | None, deadline_ms: float
) -> tuple[Decider, Keyring]:
    """Decide lines with the pack ``policy`` or the engine ``spec`` (exactly one), and the keyring.

    A pack is loaded before the keyring, so a bad pack fails before a keyring is created.
    """
    if spec is not None and policy is None:
        ring = load_keyring(keyring)
        return open_engine(spec, ring, deadline_ms=deadline_ms).decide_lines, ring
    if policy is not None and spec is None:
        pack = load_pack(policy)
        ring = load_keyring(keyring)
        point = DecisionPoint(pack, ring, deadline_ms=deadline_ms)
        return (lambda lines: decide_lines(point, lines)), ring
    raise UsageError(
        "give either --policy PACK or --engine KIND:SOURCE",
        hint="--policy decides with refusalkit's own engine; --engine with Cedar, Rego, OPA or "
        "AGT (docs/engines.md).",
    )
