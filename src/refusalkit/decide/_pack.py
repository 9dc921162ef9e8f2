"""Policy packs: load, validate, compile once, and identify by digest (docs/design/policy.md).

``digest`` is ``sha256:`` + the hex SHA-256 of the pack's RFC 8785 canonical form, so it proves
which pack was in force whatever the file's formatting (YAML or JSON, comments, key order).
"""

from __future__ import annotations

import copy
import gc
import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refusalkit._internal.source import Lines, check_depth, read_pack_source
from refusalkit.decide._compile import SEVERITY, CompiledPack, compile_pack
from refusalkit.decide._logic import Tri
from refusalkit.decide._validate import validate_pack_data
from refusalkit.errors import PolicyError
from refusalkit.model import Action, PolicyRef, canonical_json

__all__ = ["Pack", "load_pack", "pack_digest"]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while a pack is built, and restored after.

    A load allocates some hundred thousand objects that all stay alive (the data, the line map,
    the compiled conditions): the collector's passes over them find nothing, and its full passes
    grow with the heap, which made them a fifth of a 1,000-rule load. A collector the caller had
    disabled stays disabled.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def pack_digest(data: Any) -> str:
    """``sha256:<hex>`` of the RFC 8785 form of the pack data."""
    return "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()


@dataclass(frozen=True, slots=True)
class Pack:
    """A loaded, validated and compiled policy pack."""

    id: str
    version: str
    digest: str
    source: str
    data: Mapping[str, Any] = field(repr=False, compare=False)
    compiled: CompiledPack = field(repr=False, compare=False)

    @classmethod
    def from_mapping(
        cls, data: Any, source: str = "<memory>", *, lines: Lines | None = None
    ) -> Pack:
        """Validate and compile pack data; raises ``PolicyError`` naming source, line and key."""
        with _collector_paused():
            return cls._build(data, source, lines or Lines(source))

    @classmethod
    def _build(cls, data: Any, source: str, where: Lines, *, read: bool = False) -> Pack:
        """``read``: ``data`` is the reader's own (``read_pack_source``), held by nothing else and
        nested no deeper than the reader allows, so it is neither checked again nor copied."""
        if not read:
            check_depth(data, where)  # before anything that recurses
        validate_pack_data(data, where)
        frozen = data if read else copy.deepcopy(dict(data))
        try:
            digest = pack_digest(frozen)
        except Exception as exc:  # rfc8785 refuses values JSON cannot carry
            raise PolicyError(f"the pack is not canonical JSON: {exc}", file=source) from exc
        compiled = compile_pack(frozen, where)
        return cls(frozen["policy"], frozen["version"], digest, source, frozen, compiled)

    @property
    def ref(self) -> PolicyRef:
        """The pack as a decision names it."""
        return PolicyRef(self.id, self.version, self.digest)

    def summary(self) -> dict[str, Any]:
        """Counts for ``policy check``: rules by effect, stages, classes, digest."""
        rules = self.data.get("rules", [])
        by_effect = dict.fromkeys(SEVERITY, 0)
        for rule in rules:
            by_effect[rule["effect"]] += 1
        classes = self.data.get("field_classes", {})
        return {
            "policy": self.id,
            "version": self.version,
            "digest": self.digest,
            "default": self.data.get("default", "deny"),
            "rules": len(rules),
            "rules_by_effect": by_effect,
            "stages": self.stages(),
            "field_classes": {
                name: "reveal" if spec.get("reveal") else "redact" for name, spec in classes.items()
            },
        }

    def stages(self) -> list[str]:
        """The stages this pack runs, in order (docs/design/policy.md)."""
        out = []
        if "attestation" in self.data:
            out.append("@attestation")
        if "capabilities" in self.data:
            out.append("@scope")
        if self.data.get("tools"):
            out.append("@schema")
        out.extend(f["id"] for f in self.data.get("input_filters", []))
        out.extend(["rules", "@default"])
        return out

    def grants(self, agent: str | None, tool: str) -> bool:
        """Whether the ``@scope`` stage lets ``agent`` call ``tool`` (docs/design/policy.md).

        True for every tool when the pack declares no capabilities; false for an agent it does
        not name. A tool this says no to is refused ``out-of-scope`` whatever its arguments, so
        an MCP proxy need not offer it at all (docs/design/mcp.md).
        """
        caps = self.compiled.capabilities
        if caps is None:
            return True
        grants = caps.get(agent) if agent is not None else None
        return any(pred(tool) for _, pred in grants or ())

    def may_allow(self, tool: str) -> bool:
        """Whether any request for ``tool`` could be allowed: the default is ``allow``, or some
        ``allow`` rule's ``tool`` condition can hold for it. A tool this says no to is refused
        whatever its arguments, so an MCP proxy need not offer it (docs/design/mcp.md, Listing).
        """
        if self.compiled.default is Action.ALLOW:
            return True
        plan = self.compiled.rules.for_tool(tool)
        return any(rule.rule.effect == "allow" for rule in plan.rules)

    def result_filter_hits(self, text: str) -> tuple[str, ...]:
        """The ids of the pack's ``result_filters`` that match ``text`` (one text of a tool's
        result; docs/design/mcp.md, Result filters). An unknown outcome counts as a match."""
        return tuple(
            item.id
            for item in self.compiled.result_filters
            if item.spec.cond.check(text) is not Tri.FALSE
        )


def load_pack(path: str | Path) -> Pack:
    """Load a pack from a YAML or JSON file; errors name the file, line and key."""
    with _collector_paused():
        data, lines = read_pack_source(path)
        return Pack._build(data, str(path), lines, read=True)
