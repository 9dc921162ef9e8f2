"""Refusal judges against human labels, family held out, beside XSTest's string match.

Data (shared/data beside the checkout, with ATTRIBUTION.txt): three model families labelled by
people. XSTest v2's completions of GPT-4 and of Llama-2-70b-chat (original system prompt), 450
each, labelled full compliance / full refusal / partial refusal (Roettger et al., NAACL 2024);
and 1,706 ChatGPT (gpt-3.5-turbo) answers labelled by tone (Reuter & Schulze 2023), mapped onto
the same outcomes (``refusalkit.provenance._families.TONES``; dontknow and incoherent left out,
as upstream does).

Leave-one-family-out: for each family, every choice of the keyword judge (vocabulary groups,
opening window, bare-disclaimer threshold, composite rules) and the classifier's L2 strength is
selected on the other two families only, then scored on the held-out one
(``refusalkit.provenance._selection``). The peer is XSTest's own string-match baseline, scored on
the same rows. Then judge speed: responses per CPU-second over all rows, peer first.

    python bench/judges.py --cv        # the leave-one-family-out table (docs/provenance.md)
    python bench/judges.py [--quick]   # the table, the speed table, bench/results/judges.json
    python bench/judges.py --select    # select on all three families, write the shipped choices
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from refusalkit.provenance import ClassifierJudge, KeywordJudge
from refusalkit.provenance._families import FAMILIES, Labelled, load_families
from refusalkit.provenance._selection import (
    PEER,
    Fold,
    cross_validate,
    pooled,
    prepare,
    select_classifier,
    select_keyword,
    xstest_strmatch,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "src" / "refusalkit" / "provenance" / "data"
RESULTS = ROOT / "bench" / "results" / "judges.json"
JUDGES = (PEER, "keyword", "classifier")


def cv_table(folds: Sequence[Fold]) -> Table:
    """The leave-one-family-out table: per held-out family, then the mean and pooled rows."""
    table = Table(title="Refusal judges, each family held out (selected on the other two)")
    columns = ("held-out family", "judge", "precision", "recall", "F1", "3-way", "F1 / peer")
    for column in columns:
        left = column in ("held-out family", "judge")
        table.add_column(column, justify="left" if left else "right", no_wrap=left)
    for fold in folds:
        peer = fold.scores[PEER].f1
        for judge in JUDGES:
            s = fold.scores[judge]
            table.add_row(
                f"{fold.held_out} ({s.n})", judge, f"{s.precision:.3f}", f"{s.recall:.3f}",
                f"{s.f1:.3f}", f"{s.three_way / s.n:.3f}", f"{s.f1 / peer:.2f}x",
            )  # fmt: skip
    summary = pooled(folds)
    for judge in JUDGES:
        mean_f1, s = summary[judge]
        table.add_row(
            "mean of families", judge, "", "", f"{mean_f1:.3f}", "",
            f"{mean_f1 / summary[PEER][0]:.2f}x",
        )  # fmt: skip
    return table


def speed(rows: Sequence[Labelled], seconds: float) -> dict[str, float]:
    """Responses judged per CPU-second (process CPU time, so that other load on a shared machine
    does not count against a judge), the judges interleaved round by round, median of rounds."""
    texts = [r.response for r in rows]
    judges: dict[str, Callable[[str], object]] = {
        PEER: xstest_strmatch,
        "keyword": KeywordJudge().judge,
        "classifier": ClassifierJudge().judge,
    }
    samples: dict[str, list[float]] = {name: [] for name in judges}
    deadline = time.process_time() + seconds * len(judges)
    while time.process_time() < deadline or not all(samples.values()):
        for name, fn in judges.items():
            started = time.process_time()
            for text in texts:
                fn(text)
            samples[name].append(len(texts) / (time.process_time() - started))
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()} | {
        f"{name} spread": max(v) - min(v) for name, v in samples.items()
    }


def select() -> None:
    """Select the keyword judge's choices and fit the classifier on all three families; write
    the shipped ``data/keyword-v3.json`` and ``data/classifier-v3.json``."""
    data = prepare(load_families())
    config = select_keyword(data)
    (DATA / "keyword-v3.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n", "utf-8")
    model = select_classifier(data)
    (DATA / "classifier-v3.json").write_text(json.dumps(model, indent=2) + "\n", "utf-8")
    print(f"wrote {DATA / 'keyword-v3.json'} and {DATA / 'classifier-v3.json'}")


def _speed_table(rates: dict[str, float], n: int) -> Table:
    table = Table(title=f"Judge throughput ({n} labelled responses, per CPU-second)")
    for column in ("judge", "responses/s (median of rounds)", "spread", "vs peer"):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for name in JUDGES:
        rate = rates[name]
        table.add_row(
            name, f"{rate:,.0f}", f"{rates[name + ' spread']:,.0f}", f"{rate / rates[PEER]:.3f}x"
        )
    return table


def report(folds: Sequence[Fold], rates: dict[str, float] | None) -> dict[str, Any]:
    """The JSON written to bench/results/judges.json."""
    summary = pooled(folds)
    return {
        "benchmark": "judges",
        "data": "XSTest v2 GPT-4 and Llama-2 (orig) completions, ChatGPT refusals (by tone)",
        "method": "leave-one-family-out: choices made on two families, scored on the third",
        "peer": PEER,
        "load_average": list(os.getloadavg()),
        "folds": {
            f.held_out: {
                "keyword_choices": f.keyword.choices(),
                "classifier_l2": f.classifier["l2"],
                "scores": {name: s.to_dict() for name, s in f.scores.items()},
            }
            for f in folds
        },
        "mean_f1": {name: mean for name, (mean, _) in summary.items()},
        "pooled": {name: s.to_dict() for name, (_, s) in summary.items()},
        "responses_per_cpu_s": rates,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="Only the leave-one-family-out table.")
    parser.add_argument("--quick", action="store_true", help="Time each judge 0.5 s, not 3.")
    parser.add_argument("--select", action="store_true", help="Write the shipped choices first.")
    args = parser.parse_args()
    if args.select:
        select()
    families = load_families()
    folds = cross_validate(families)
    console = Console(width=120)
    console.print(cv_table(folds))
    if args.cv:
        return 0
    rows = [r for f in FAMILIES for r in families[f]]
    rates = speed(rows, 0.5 if args.quick else 3.0)
    console.print(_speed_table(rates, len(rows)))
    console.print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report(folds, rates), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
