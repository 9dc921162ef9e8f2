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

A text counts as flagged when the tool reports anything in it. detect-secrets runs with its
default plugins and filters on a temporary file per text (``SecretsCollection.scan_file``), as
its CLI would; it has no personal-data detectors, so its recall on those kinds is what its
secret plugins catch by chance, and the table shows secrets-only figures as well.

    python bench/detect.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from refusalkit.chat import ChatRuntime
from refusalkit.chat._detect import find_private_data, find_secrets
from refusalkit.chat._scrub import redact_text
from refusalkit.keyring import Keyring

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "data" / "detect-corpus.jsonl"
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
    return [json.loads(x) for x in CORPUS.read_text("utf-8").splitlines() if x.strip()]


def guard_flags(text: str) -> bool:
    return bool(find_secrets(text) or find_private_data(text))


class DetectSecrets:
    """Yelp's detect-secrets, default plugins and filters, scanning one temporary file a text."""

    def __init__(self, workdir: Path) -> None:
        from detect_secrets import SecretsCollection  # noqa: PLC0415 (bench-only dependency)
        from detect_secrets.settings import default_settings  # noqa: PLC0415

        self._collection = SecretsCollection
        self._settings = default_settings
        self._path = workdir / "sample.txt"

    def flags(self, text: str) -> bool:
        self._path.write_text(text, "utf-8")
        with self._settings():
            found = self._collection()
            found.scan_file(str(self._path))
        return bool(list(found))


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


def p50_ms(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def turn_text() -> str:
    """About 2,000 tokens (8,000 characters) of ordinary articulation."""
    return (TURN_WORDS * (8000 // len(TURN_WORDS) + 1))[:8000]


def timings(peer: DetectSecrets | None, runs: int) -> dict[str, float]:
    text = turn_text()
    runtime = ChatRuntime()
    out = {
        "guard_detect_ms": p50_ms(lambda: guard_flags(text), runs),
        "guard_turn_ms": p50_ms(lambda: runtime.check("summarise", text), runs),
    }
    if peer is not None:
        out["detect_secrets_ms"] = p50_ms(lambda: peer.flags(text), max(5, runs // 10))
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
    parser.add_argument("--quick", action="store_true", help="fewer timing runs")
    parser.add_argument("--no-peer", action="store_true", help="skip detect-secrets")
    args = parser.parse_args()
    rows = load_corpus()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        peer = None if args.no_peer else DetectSecrets(Path(tmp))
        results: dict[str, Any] = {}
        for split in ("dev", "heldout", "fresh", "blind", "all"):
            chosen = [r for r in rows if split == "all" or r["split"] == split]
            results[split] = {"guard": score(chosen, guard_flags)}
            if peer is not None:
                results[split]["detect_secrets"] = score(chosen, peer.flags)
            console.print(table(results, split))
        results["leaks"] = leaks(rows)
        results["timing"] = timings(peer, 30 if args.quick else 300)
    _summary(console, results)
    results["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")


def _summary(console: Console, results: dict[str, Any]) -> None:
    ours, peer = results["all"]["guard"], results["all"].get("detect_secrets")
    timing = results["timing"]
    console.print(f"leaks after redaction: {len(results['leaks'])} {results['leaks'][:10]}")
    console.print(
        f"per 2,000-token turn, p50: guard detection {timing['guard_detect_ms']:.3f} ms, "
        f"whole guarded turn {timing['guard_turn_ms']:.3f} ms"
    )
    if peer:
        console.print(
            f"detect-secrets {timing['detect_secrets_ms']:.1f} ms "
            f"({timing['detect_secrets_ms'] / timing['guard_detect_ms']:.0f}x the guard's time); "
            f"recall {ours['recall']:.3f} vs {peer['recall']:.3f} "
            f"({ours['recall'] / max(peer['recall'], 1e-9):.2f}x), "
            f"FP rate {ours['fp_rate']:.3f} vs {peer['fp_rate']:.3f}"
        )
    weakest = min(ours["per_kind"].items(), key=lambda kv: kv[1])
    console.print(f"weakest kind: {weakest[0]} {weakest[1]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
