"""What a detector reports: a kind and a character span (docs/design/chat.md, "Detectors")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Finding", "widest"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected item: its kind, its character span, and its normalised value (kept in memory
    only, for the "did the user supply it" test; never serialised)."""

    kind: str
    start: int
    end: int
    value: str

    def to_dict(self) -> dict[str, Any]:
        """Log-safe form: kind and span, never the value."""
        return {"kind": self.kind, "span": [self.start, self.end]}


def widest(findings: Iterable[Finding], fallbacks: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings in text order, without those that lie inside another one (so one secret
    found by two detectors is reported once, by the detector whose span covers more of it).

    A finding of a ``fallbacks`` kind (a generic "something secret is assigned here" detector)
    yields to any other finding it overlaps: the specific detector names the secret."""
    everything = list(findings)
    specific = [f for f in everything if f.kind not in fallbacks]
    kept = specific + [
        f
        for f in everything
        if f.kind in fallbacks and not any(f.start < s.end and s.start < f.end for s in specific)
    ]
    out: list[Finding] = []
    for f in sorted(kept, key=lambda f: (f.start, -f.end, f.kind in fallbacks)):
        if out and f.end <= out[-1].end:
            continue
        out.append(f)
    return out
