"""The typed refusal surface and hedge injection (docs/design/chat.md). Pure functions, no I/O.

A typed refusal is ``"I cannot proceed — boundary violated: "`` followed by the violated ids, each
tagged ``safety:<id>`` or ``ethics:<id>``, sorted lexicographically (by code point) and joined by
a comma (``","``, no space). Same violations, same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from refusalkit.chat._verdict import EthicsVerdict, SafetyVerdict
from refusalkit.model import TYPED_REFUSAL_PREFIX

__all__ = [
    "REFUSAL_SEPARATOR",
    "Identity",
    "Refusal",
    "build_refusal",
    "inject_hedge",
    "refusal_tags",
]

REFUSAL_SEPARATOR = ","


@dataclass(frozen=True, slots=True)
class Refusal:
    """A typed refusal: the surface text and its tags (lex-sorted)."""

    text: str
    tags: tuple[str, ...]

    @property
    def first_tag(self) -> str:
        """The first tagged id: the refusal Decision's ``matched_rule``."""
        return self.tags[0]


@dataclass(frozen=True, slots=True)
class Identity:
    """The deployment's identity and its surface preferences (hedges)."""

    name: str = "assistant"
    soft_hedge: str | None = None
    strong_hedge: str | None = None

    @property
    def hedge(self) -> tuple[str, str] | None:
        """``(strength, text)`` of the hedge to inject: soft, else strong, else none."""
        if self.soft_hedge:
            return ("soft", self.soft_hedge)
        if self.strong_hedge:
            return ("strong", self.strong_hedge)
        return None


def refusal_tags(safety: SafetyVerdict | None, ethics: EthicsVerdict | None) -> tuple[str, ...]:
    """The refusing ids, tagged and lex-sorted: checkable safety violations and the ethics
    violations that the pack lists in ``refusal_commitments`` (others never refuse)."""
    tags = {f"safety:{i}" for i in safety.violations} if safety is not None else set()
    if ethics is not None:
        tags.update(f"ethics:{i}" for i in ethics.refusing)
    return tuple(sorted(tags))


def build_refusal(safety: SafetyVerdict | None, ethics: EthicsVerdict | None) -> Refusal | None:
    """The typed refusal for these verdicts, or ``None`` when nothing refuses."""
    tags = refusal_tags(safety, ethics)
    if not tags:
        return None
    return Refusal(TYPED_REFUSAL_PREFIX + REFUSAL_SEPARATOR.join(tags), tags)


def inject_hedge(surface: str, hedge: str | None) -> str:
    """Prepend ``hedge`` once: unchanged when the surface already opens with it (ignoring case
    and leading white space), or when no hedge is configured. Idempotent."""
    if not hedge or not hedge.strip():
        return surface
    if surface.lstrip().casefold().startswith(hedge.strip().casefold()):
        return surface
    return f"{hedge.strip()} {surface}" if surface else hedge.strip()
