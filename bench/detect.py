"""Detection quality of the chat guard beside Yelp's detect-secrets, same corpus, same run.

The corpus (``bench/data/detect-corpus.jsonl``, written by ``bench/detect_corpus.py``) holds
positives over 39 kinds of secret and personal data, in code, JSON, YAML, .env, URLs, logs and
prose, quoted, upper-cased and base64-wrapped, and benign look-alikes (UUIDs, git SHAs, hashes,
documentation example keys, version strings, prose about passwords, test card numbers). Two
splits: ``dev`` (what the detectors were developed against) and ``heldout`` (other templates,
not tuned on). For each tool it prints recall per kind and overall and the false-positive rate;
for the guard also the leak rate (a detected positive whose redacted text still holds an
8-character run of the secret), and the detection time per 2,000-token turn (p50) for both.

Honesty about tuning: the dev split was tuned on; the held-out split was run, its misses (split
and spaced tokens) fixed, so it is tuned too; the ``fresh`` split was written and committed
before its first run, which gave the guard recall 0.980, weakest kind 0.80 (e-mail addresses
spelled out as "name [at] host [dot] com"), false-positive rate 0.000 (detect-secrets: 0.412 and
0.280). Those misses are fixed now. The ``blind`` split, written last and committed before its
one run (``bench/results/detect-blind-first-run.txt``), gave recall 0.984, false-positive rate
0.000 (detect-secrets 0.403 and 0.300), and missed two of its kinds' 0.90 floor: phone numbers
right after a colon (``NOTE:+49 30 ...``) scored 0.75. That was fixed after the run, so every
split's current figures are after tuning; the first-run file is the honest held-out figure.

The ``evasion`` split (``bench/data/detect-evasion.jsonl``, ``bench/detect_evasion.py``) was
written after the normalised view, the context passwords and the digit-run rules, committed
before its first run, and that run is kept in ``bench/results/detect-evasion-first-run.txt``.

A text counts as flagged when the tool reports anything in it. detect-secrets runs in memory:
default plugins and filters, the line pass its ``scan_file`` runs, on the text's lines (no
temporary files, no eager search); it has no personal-data detectors, so its recall on those
kinds is what its secret plugins catch by chance, and the table shows secrets-only figures as
well. Timing is the p50 (with the interquartile range) per 2,000-token turn over distinct turns
(GPT-4's XSTest completions, and the project's docs and source, 8,000 characters each, after five
uncounted warm-up turns), in wall and CPU time, with the load average: detect-secrets on every
turn, interleaved with the guard on every other turn and the guard's detectors without the
normalised view on the rest (each text is scanned once by the guard: RE2 builds its DFA states
as it reads new text, so a second scan of the same text would be cheaper).

    python bench/detect.py [--quick]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from refusalkit.chat import _personal, _secrets, scan
from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._scrub import redact_text
from refusalkit.keyring import Keyring

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "data" / "detect-corpus.jsonl"
EVASION = ROOT / "bench" / "data" / "detect-evasion.jsonl"
RESULTS = ROOT / "bench" / "results" / "detect.json"
PII_KINDS = frozenset(
    {"email", "phone_international", "phone_national", "payment_card", "iban", "us_ssn",
     "uk_nino", "es_dni", "fr_nir", "it_codice_fiscale", "br_cpf"}
)  # fmt: skip
TURN_WORDS = (
    "the model answered the request with a summary of the report and a table of results for "
    "version 2.4 of the service, 42 items, updated on 2026-11-30 at 10:30 by the review team; "
)


def load_corpus() -> list[dict[str, Any]]:
    lines = CORPUS.read_text("utf-8").splitlines() + EVASION.read_text("utf-8").splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def guard_flags(text: str) -> bool:
    return bool(find_secrets(text) or find_private_data(text))


class DetectSecrets:
    """Yelp's detect-secrets with its default plugins and filters: the line pass ``scan_file``
    runs (``_process_line_based_plugins``), on the text's lines in memory, no temporary file and
    no eager search (``scan_line``, its ad-hoc API, searches eagerly and flags nearly every
    benign row)."""

    def __init__(self) -> None:
        from detect_secrets.core import scan as ds_scan  # noqa: PLC0415 (bench-only dependency)
        from detect_secrets.settings import default_settings  # noqa: PLC0415

        self._lines = ds_scan._process_line_based_plugins
        self._settings = default_settings

    def flags(self, text: str) -> bool:
        with self._settings():
            lines = list(enumerate(text.splitlines(), start=1))
            return any(True for _ in self._lines(lines=lines, filename="sample.txt"))


def score(rows: list[dict[str, Any]], flags: Callable[[str], bool]) -> dict[str, Any]:
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    false_positives, benign = 0, 0
    for row in rows:
        hit = flags(row["text"])
        if row["kind"] is None:
            benign += 1
            false_positives += hit
            continue
        per_kind[row["kind"]][0] += hit
        per_kind[row["kind"]][1] += 1
    found = sum(v[0] for v in per_kind.values())
    total = sum(v[1] for v in per_kind.values())
    secrets = [v for k, v in per_kind.items() if k not in PII_KINDS]
    return {
        "recall": found / total if total else 0.0,
        "recall_secrets": sum(v[0] for v in secrets) / max(1, sum(v[1] for v in secrets)),
        "fp_rate": false_positives / benign if benign else 0.0,
        "false_positives": false_positives,
        "benign": benign,
        "positives": total,
        "per_kind": {k: v[0] / v[1] for k, v in sorted(per_kind.items())},
    }


def leaks(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Positives the guard flags whose redacted text still holds 8 characters of the secret."""
    redactor = Keyring.generate().redactor()
    out = []
    for row in rows:
        if row["kind"] is None or not guard_flags(row["text"]):
            continue
        redacted = redact_text(row["text"], redactor)
        secret = row["secret"]
        if any(secret[i : i + 8] in redacted for i in range(len(secret) - 7)):
            out.append(f"{row['kind']}/{row['variant']}")
    return out


WARM_UP = 5  # turns run before the timed ones
XSTEST = ROOT / "tests" / "vectors" / "xstest" / "xstest_v2_completions_gpt4.csv"


def model_turns(count: int) -> list[str]:
    """Distinct 8,000-character turns (about 2,000 tokens) of real model output: GPT-4's
    XSTest completions (Markdown lists, code, tables), shuffled and joined."""
    with XSTEST.open(encoding="utf-8", newline="") as handle:
        replies = [row["completion"] for row in csv.DictReader(handle) if row["completion"]]
    rng = random.Random(7)
    out = []
    for _ in range(count):
        rng.shuffle(replies)
        out.append("\n\n".join(replies)[:8000])
    return out


def project_turns(count: int) -> list[str]:
    """Distinct 8,000-character chunks of the project's docs and source (code-heavy, full of
    secret-related words: a worst case for keyword prefilters)."""
    paths = sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
    whole = "\n".join(p.read_text("utf-8") for p in paths)
    return [whole[i : i + 8000] for i in range(0, len(whole) - 8000, 8000)][:count]


def _spread(times: list[float]) -> dict[str, float]:
    q = statistics.quantiles(times, n=4)
    return {"p50_ms": statistics.median(times) * 1000, "q1_ms": q[0] * 1000, "q3_ms": q[2] * 1000}


def _no_view(text: str) -> None:
    """The detectors on the text alone, without the normalised view (for its cost)."""
    _secrets.find_secrets(text)
    _personal.find_private_data(text)


def _timed(call: Callable[[str], object], text: str, wall: list[float], cpu: list[float]) -> None:
    start, start_cpu = time.perf_counter(), time.process_time()
    call(text)
    cpu.append(time.process_time() - start_cpu)
    wall.append(time.perf_counter() - start)


def timings(peer: DetectSecrets | None, count: int) -> dict[str, Any]:
    """Per distinct turn, guard, guard without the view, then peer (interleaved): p50 and
    quartiles of wall time (and of CPU time), and the load."""
    redactor = Keyring.generate().redactor()

    def guard(text: str) -> None:
        scan(text, redactor)

    out: dict[str, Any] = {"load_average": [os.getloadavg()[0]]}
    for name, texts in (("model_turns", model_turns(count)), ("project", project_turns(count))):
        times: dict[str, list[float]] = defaultdict(list)
        for text in texts[:WARM_UP]:  # RE2 builds its DFA states lazily: warm them, uncounted
            guard(text)
            _no_view(text)
        for i, text in enumerate(texts[WARM_UP:]):
            # each text once: RE2's DFA states built for a text make a second scan of it cheaper
            if i % 2:
                _timed(_no_view, text, times["guard_no_view"], times["guard_no_view_cpu"])
            else:
                _timed(guard, text, times["guard_scan"], times["guard_scan_cpu"])
            if peer is not None:
                _timed(peer.flags, text, times["detect_secrets"], times["peer_cpu"])
        out[name] = {"turns": len(texts) - WARM_UP} | {k: _spread(v) for k, v in times.items()}
    out["load_average"].append(os.getloadavg()[0])
    return out


def table(results: dict[str, Any], split: str) -> Table:
    ours, peer = results[split]["guard"], results[split].get("detect_secrets")
    t = Table(
        title=f"detection, {split} split ({ours['positives']} positives, {ours['benign']} benign)"
    )
    t.add_column("kind")
    t.add_column("guard recall", justify="right")
    t.add_column("detect-secrets recall", justify="right")
    for kind, recall in ours["per_kind"].items():
        other = f"{peer['per_kind'].get(kind, 0):.2f}" if peer else "-"
        mark = "" if recall >= 0.9 else "  <0.90"
        t.add_row(kind, f"{recall:.2f}{mark}", other)
    for label, key, fmt in (
        ("overall recall", "recall", "{:.3f}"),
        ("recall, secrets only", "recall_secrets", "{:.3f}"),
        ("false-positive rate", "fp_rate", "{:.3f}"),
    ):
        other = fmt.format(peer[key]) if peer else "-"
        t.add_row(f"[bold]{label}", f"[bold]{fmt.format(ours[key])}", f"[bold]{other}")
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed turns")
    parser.add_argument("--no-peer", action="store_true", help="skip detect-secrets")
    args = parser.parse_args()
    rows = load_corpus()
    console = Console()
    peer = None if args.no_peer else DetectSecrets()
    results: dict[str, Any] = {}
    for split in ("dev", "heldout", "fresh", "blind", "evasion", "all"):
        chosen = [r for r in rows if split == "all" or r["split"] == split]
        results[split] = {"guard": score(chosen, guard_flags)}
        if peer is not None:
            results[split]["detect_secrets"] = score(chosen, peer.flags)
        console.print(table(results, split))
    results["leaks"] = leaks(rows)
    results["timing"] = timings(peer, WARM_UP + (60 if args.quick else 200))
    _summary(console, results)
    results["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")


def _summary(console: Console, results: dict[str, Any]) -> None:
    ours, peer = results["all"]["guard"], results["all"].get("detect_secrets")
    timing = results["timing"]
    console.print(f"leaks after redaction: {len(results['leaks'])} {results['leaks'][:10]}")
    console.print(
        f"load average {timing['load_average'][0]:.2f} -> {timing['load_average'][1]:.2f}"
    )
    for name in ("model_turns", "project"):
        ours_ms, theirs_ms = timing[name]["guard_scan"], timing[name].get("detect_secrets")
        line = (
            f"{name}: {timing[name]['turns']} distinct 2,000-token turns (the guard on every "
            f"other one), p50 [q1-q3]: guard "
            f"scan {ours_ms['p50_ms']:.3f} ms [{ours_ms['q1_ms']:.3f}-{ours_ms['q3_ms']:.3f}]"
        )
        if theirs_ms:
            line += (
                f"; detect-secrets {theirs_ms['p50_ms']:.3f} ms [{theirs_ms['q1_ms']:.3f}-"
                f"{theirs_ms['q3_ms']:.3f}] ({theirs_ms['p50_ms'] / ours_ms['p50_ms']:.2f}x)"
            )
        console.print(line, markup=False)
        cpu, bare = timing[name]["guard_scan_cpu"], timing[name]["guard_no_view_cpu"]
        console.print(
            f"{name}: CPU p50 guard scan {cpu['p50_ms']:.3f} ms, without the view "
            f"{bare['p50_ms']:.3f} ms ({cpu['p50_ms'] / bare['p50_ms']:.2f}x)",
            markup=False,
        )
    if peer:
        console.print(
            f"recall {ours['recall']:.3f} vs {peer['recall']:.3f} "
            f"({ours['recall'] / max(peer['recall'], 1e-9):.2f}x), "
            f"FP rate {ours['fp_rate']:.3f} vs {peer['fp_rate']:.3f}"
        )
    weakest = min(ours["per_kind"].items(), key=lambda kv: kv[1])
    console.print(f"weakest kind: {weakest[0]} {weakest[1]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
