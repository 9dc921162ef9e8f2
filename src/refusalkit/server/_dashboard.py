"""What the dashboard shows, gathered from the journal and shaped for the templates.

Charts are computed here as plain numbers (bar positions) and drawn by the template as inline
SVG: no script, no external asset, nothing fetched at run time.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from refusalkit.journal import Journal
from refusalkit.model import ReasonCode, format_timestamp, now_utc

__all__ = [
    "CODE_COLOURS",
    "Bar",
    "DashboardData",
    "Timeline",
    "gather",
    "timeline",
]

DECISION = "refusalkit.decision/v1"
# Every version still read (docs/design/provenance.md): v2 is written, v1 stays in old journals.
DRIFT = ("refusalkit.drift-report/v2", "refusalkit.drift-report/v1")
BASELINE = ("refusalkit.baseline/v2", "refusalkit.baseline/v1")
CODE_COLOURS = {
    ReasonCode.POLICY_DENIED.value: "#d6336c",
    ReasonCode.OUT_OF_SCOPE.value: "#f59f00",
    ReasonCode.ATTESTATION_FAILED.value: "#7048e8",
    ReasonCode.INPUT_REJECTED.value: "#1c7ed6",
    ReasonCode.UNAVAILABLE.value: "#868e96",
    ReasonCode.APPROVAL_REQUIRED.value: "#2f9e44",
    ReasonCode.RATE_LIMITED.value: "#e8590c",
}
_BUCKETS = (60, 120, 300, 600, 900, 1800, 3600)
_MAX_SCAN = 20_000


@dataclass(frozen=True, slots=True)
class Bar:
    """One stacked segment: its bucket, code, count and its box in chart units."""

    x: float
    y: float
    width: float
    height: float
    code: str
    count: int
    label: str


@dataclass(frozen=True, slots=True)
class Timeline:
    """Refusals per reason code over time, as SVG boxes, with axis ticks."""

    bars: tuple[Bar, ...]
    ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, int], ...]
    totals: Mapping[str, int]
    bucket_s: int
    since: str


@dataclass(slots=True)
class DashboardData:
    """Everything the dashboard page renders."""

    stats: Mapping[str, Any]
    timeline: Timeline
    top_rules: list[tuple[str, int, float]]
    recent: list[tuple[int, Mapping[str, Any]]]
    drift: list[tuple[int, Mapping[str, Any]]]
    baselines: list[tuple[int, Mapping[str, Any]]]
    size: int
    checkpoint: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def _parse(ts: str) -> dt.datetime:
    return dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def timeline(
    refusals: Iterable[tuple[str, str]],
    now: dt.datetime,
    *,
    width: float = 720,
    height: float = 200,
) -> Timeline:
    """Bucket ``(decided_at, reason_code)`` pairs into at most 30 nicely sized time buckets."""
    points = [(_parse(ts), code) for ts, code in refusals]
    earliest = min((p for p, _ in points), default=now)
    span = max((now - earliest).total_seconds(), 1800.0)
    bucket = next((b for b in _BUCKETS if span / b <= 30), 3600)
    start = int(now.timestamp() - span) // bucket * bucket
    count = max(1, int((now.timestamp() - start) // bucket) + 1)
    grid: list[Counter[str]] = [Counter() for _ in range(count)]
    for moment, code in points:
        grid[min(count - 1, max(0, int((moment.timestamp() - start) // bucket)))][code] += 1
    peak = max((sum(c.values()) for c in grid), default=0) or 1
    slot = width / count
    bars: list[Bar] = []
    for i, cell in enumerate(grid):
        base = height
        label = dt.datetime.fromtimestamp(start + i * bucket, dt.UTC).strftime("%H:%M")
        for code in CODE_COLOURS:
            if cell[code]:
                h = height * cell[code] / peak
                base -= h
                bars.append(
                    Bar(i * slot + 1, max(base, 0.0), max(slot - 2, 1), h, code, cell[code], label)
                )
    every = max(1, count // 6)
    ticks = tuple(
        (
            i * slot + slot / 2,
            dt.datetime.fromtimestamp(start + i * bucket, dt.UTC).strftime("%H:%M"),
        )
        for i in range(0, count, every)
    )
    y_ticks = tuple((height - height * v / peak, v) for v in sorted({0, peak // 2, peak}))
    totals = Counter(code for _, code in points)
    return Timeline(
        tuple(bars),
        ticks,
        y_ticks,
        dict(totals),
        bucket,
        format_timestamp(dt.datetime.fromtimestamp(start, dt.UTC)),
    )


def _refusal_times(journal: Journal, since: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for action in ("deny", "block"):
        for _, record in journal.query(
            schema=DECISION, action=action, since=since, limit=_MAX_SCAN
        ):
            code = record.get("reason_code")
            if isinstance(code, str) and isinstance(record.get("decided_at"), str):
                found.append((record["decided_at"], code))
    return found


def _recent_refusals(
    journal: Journal, size: int, limit: int
) -> list[tuple[int, Mapping[str, Any]]]:
    import json  # noqa: PLC0415 (only here)

    start = max(0, size - 2000)
    out: list[tuple[int, Mapping[str, Any]]] = []
    for offset, raw in enumerate(journal.entries(start, size)):
        record = json.loads(raw)
        if record.get("schema") == DECISION and record.get("action") in ("deny", "block"):
            out.append((start + offset, record))
    return out[::-1][:limit]


def _latest(
    journal: Journal, schemas: tuple[str, ...], limit: int
) -> list[tuple[int, Mapping[str, Any]]]:
    rows: list[tuple[int, Mapping[str, Any]]] = sorted(
        (row for schema in schemas for row in journal.query(schema=schema, limit=_MAX_SCAN)),
        key=lambda r: r[0],
    )
    return rows[::-1][:limit]


def gather(journal: Journal) -> DashboardData:
    """Read what the dashboard shows (runs on the journal's reader thread)."""
    now = now_utc()
    size = journal.size()
    stats = journal.stats()
    since = format_timestamp(now - dt.timedelta(hours=24))
    rules = {k: v for k, v in dict(stats.get("by_rule", {})).items() if k not in ("", "-")}
    by_rule = sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    top = by_rule[0][1] if by_rule else 1
    return DashboardData(
        stats=stats,
        timeline=timeline(_refusal_times(journal, since), now),
        top_rules=[(rule, n, 100.0 * n / top) for rule, n in by_rule],
        recent=_recent_refusals(journal, size, 15),
        drift=_latest(journal, DRIFT, 10),
        baselines=_latest(journal, BASELINE, 10),
        size=size,
        checkpoint=journal.latest_checkpoint(),
    )
