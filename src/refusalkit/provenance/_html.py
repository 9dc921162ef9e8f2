"""The drift report as one self-contained HTML page: inline CSS and SVG, no scripts, no network.

Every piece of text from the report is escaped (``html.escape``); numbers are formatted here.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["render_html"]

_STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;color:#1b1b1b}"
    "h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}"
    "table{border-collapse:collapse;width:100%}"
    "td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left}"
    ".v-stable{color:#17663a}.v-more-restrictive,.v-more-permissive{color:#a4161a}"
    ".v-inconclusive{color:#8a5a00}.flag{color:#a4161a;font-weight:600}"
    ".directive{font-size:1.1rem;padding:.6rem;border:1px solid #ccc}"
)
_ROW_H, _LEFT, _WIDTH = 34, 230, 420
_BASE, _NOW = "#8da9c4", "#e07a5f"


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _line(x1: float, x2: float, y1: float, y2: float, extra: str = "") -> str:
    return f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="#000"{extra}/>'


def _bar(y: float, rate: float, interval: list[float], colour: str) -> str:
    x, lo, hi = (_LEFT + v * _WIDTH for v in (rate, interval[0], interval[1]))
    return (
        f'<rect x="{_LEFT}" y="{y:.1f}" width="{x - _LEFT:.1f}" height="10" fill="{colour}"/>'
        + _line(lo, hi, y + 5, y + 5, ' stroke-width="1.2"')
        + _line(lo, lo, y + 1, y + 9)
        + _line(hi, hi, y + 1, y + 9)
    )


def _axis(bottom: float) -> str:
    ticks = []
    for t in (0, 0.25, 0.5, 0.75, 1):
        x = _LEFT + t * _WIDTH
        ticks.append(f'<line x1="{x}" x2="{x}" y1="16" y2="{bottom}" stroke="#eee"/>')
        ticks.append(f'<text x="{x}" y="12" text-anchor="middle">{int(t * 100)}%</text>')
    return "".join(ticks)


def _legend(y: float) -> str:
    return (
        f'<rect x="{_LEFT}" y="{y - 12}" width="10" height="10" fill="{_BASE}"/>'
        f'<text x="{_LEFT + 14}" y="{y - 3}">baseline</text>'
        f'<rect x="{_LEFT + 90}" y="{y - 12}" width="10" height="10" fill="{_NOW}"/>'
        f'<text x="{_LEFT + 104}" y="{y - 3}">current '
        "(bars: rate; whiskers: 95% Wilson interval)</text>"
    )


def _chart(categories: dict[str, Any]) -> str:
    rows = []
    for i, (name, c) in enumerate(categories.items()):
        y = 24 + i * _ROW_H
        rows.append(f'<text x="{_LEFT - 8}" y="{y + 14}" text-anchor="end">{escape(name)}</text>')
        rows.append(_bar(y, c["baseline_rate"], c["baseline_interval"], _BASE))
        rows.append(_bar(y + 12, c["current_rate"], c["current_interval"], _NOW))
    bottom = 24 + len(categories) * _ROW_H
    height = bottom + 16
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="refusal rate per category" width="{_LEFT + _WIDTH + 20}" '
        f'height="{height}" font-size="12">{_axis(bottom)}{"".join(rows)}{_legend(height)}</svg>'
    )


def _table(head: tuple[str, ...], rows: list[list[str]]) -> str:
    header = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{header}</tr>{body}</table>"


def _category_table(categories: dict[str, Any]) -> str:
    rows = [
        [
            escape(name),
            str(c["n"]),
            _pct(c["baseline_rate"]),
            _pct(c["current_rate"]),
            f"{c['mcnemar']['p_value']:.3g}",
            f'<span class="v-{escape(c["verdict"])}">{escape(c["verdict"])}</span>',
        ]
        for name, c in categories.items()
    ]
    return _table(("category", "n", "baseline", "current", "McNemar p", "verdict"), rows)


def _flips_table(flips: list[dict[str, Any]]) -> str:
    if not flips:
        return "<p>No prompt changed outcome.</p>"
    rows = [
        [
            escape(f["id"]),
            escape(f["category"]),
            escape(f["expect"]),
            f"{escape(f['baseline'])} &rarr; {escape(f['current'])}",
            '<span class="flag">FLAGGED</span>' if f["flagged"] else "",
            escape(f["detail"]),
        ]
        for f in flips
    ]
    return _table(("id", "category", "expect", "change", "", "judge detail"), rows)


def _summary(report: dict[str, Any]) -> str:
    overall, directive, verdict = report["overall"], report["directive"], escape(report["verdict"])
    forced = ""
    if report["forced"]:
        forced = f'<p class="flag">FORCED comparison: {escape("; ".join(report["mismatches"]))}</p>'
    return (
        f'{forced}<p class="directive">{escape(directive["action"])}: '
        f"{escape(directive['reason'])}</p>"
        f'<p>Verdict: <b class="v-{verdict}">{verdict}</b> &mdash; refusal rate '
        f"{_pct(overall['baseline_rate'])} &rarr; {_pct(overall['current_rate'])} over "
        f"{overall['n']} prompts; McNemar p = {overall['mcnemar']['p_value']:.3g}. "
        f"{escape(overall['why'])}</p>{_both_rates(report)}{_warnings(report)}"
    )


def _both_rates(report: dict[str, Any]) -> str:
    """Full + partial and full-only refusal rates (reports without them show nothing)."""
    overall = (report.get("refusal_rates") or {}).get("overall")
    if not overall:
        return ""
    counted = report.get("parameters", {}).get("count", "full+partial")
    parts = []
    for name in ("full+partial", "full"):
        r = overall.get(name)
        if r:
            mark = " (counted)" if name == counted else ""
            parts.append(
                f"{escape(name)}{mark}: {_pct(r['baseline_rate'])} &rarr; {_pct(r['current_rate'])}"
            )
    return f"<p>Refusal rate, {'; '.join(parts)}</p>" if parts else ""


def _flagged(report: dict[str, Any]) -> str:
    """The flag list a reviewer reads first: most confident first, with the judge's precision."""
    by_id = {f["id"]: f for f in report.get("flipped", [])}
    flagged = [by_id[i] for i in report.get("flagged", []) if i in by_id]
    if not flagged:
        return ""
    precision = report.get("flag_precision") or {}
    if precision.get("point") is None:
        measured = "judge precision unmeasured"
    else:
        low, high = precision["interval"]
        measured = (
            f"judge precision {_pct(precision['point'])} (95% CI {_pct(low)} to {_pct(high)})"
        )
    rows = [
        [escape(f["id"]), escape(f["category"]), f"{float(f.get('confidence', 1.0)):.2f}"]
        for f in flagged
    ]
    return (
        f'<h2>Flagged: expect refuse, now complies ({len(flagged)})</h2><p class="flag">'
        f"{escape(measured)}; most confident first</p>"
        f"{_table(('id', 'category', 'confidence'), rows)}"
    )


def _warnings(report: dict[str, Any]) -> str:
    """The judge-reliability warnings (runs judged with very different reliability)."""
    found = report.get("warnings") or []
    items = "".join(f"<li>{escape(str(w))}</li>" for w in found)
    return f'<ul class="flag">{items}</ul>' if items else ""


def _footer(report: dict[str, Any]) -> str:
    base = report["baseline"]
    judge = report["current"]["judge"]
    return (
        f"<p><small>report {escape(report['report_id'])}, {escape(report['created_at'])}; "
        f"baseline {escape(str(base.get('baseline_id') or base.get('run_id')))}; "
        f"judge {escape(judge['id'])} {escape(judge['version'])}</small></p>"
    )


def render_html(report: dict[str, Any]) -> str:
    """A self-contained HTML page for a ``refusalkit.drift-report/v2`` record."""
    title = escape(f"Refusal drift: {report['current'].get('model', '')}")
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>{_summary(report)}"
        f"<h2>Refusal rate per category</h2>{_chart(report['categories'])}"
        f"{_category_table(report['categories'])}{_flagged(report)}"
        f"<h2>Flipped prompts ({len(report['flipped'])})</h2>{_flips_table(report['flipped'])}"
        f"{_footer(report)}</body></html>\n"
    )
