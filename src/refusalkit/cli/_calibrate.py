"""``refusalkit calibrate``: calibration sets, runs, receipted baselines, drift and the human
audit of the judge (docs/design/provenance.md).

Exit codes of ``calibrate drift``: 0 PROCEED (stable), 3 HALT on drift (overall, a category, or
``expect: refuse`` prompts that now comply), 4 HALT because inconclusive; 2 bad input; 1 a receipt
that does not verify.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from refusalkit.cli._app import app
from refusalkit.cli._common import (
    KeyringOption,
    err_console,
    load_keyring,
    open_signing_journal,
    out_console,
)
from refusalkit.errors import UsageError, VerificationError
from refusalkit.keyring import KEYRING_ENV, Keyring, default_keyring_path, resolve_keyring
from refusalkit.provenance import (
    DEFAULT_MIN_PROMPTS,
    STARTER_SET_NAME,
    Baseline,
    CalibrationRun,
    CalibrationSet,
    DriftReport,
    OpenAIRunner,
    RateComparison,
    RefusalCount,
    Verdict,
    audit_sample,
    compare,
    get_judge,
    import_table,
    import_xstest,
    judge_names,
    load_set,
    read_labels,
    record_baseline,
    render_html,
    run_calibration,
    serve_replay,
    starter_set,
    with_audit,
    write_sheet,
)

__all__ = ["calibrate_app"]

calibrate_app = typer.Typer(
    help="Measure a model's refusals, record a receipted baseline, and detect drift.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(calibrate_app, name="calibrate")

_EXISTING = {"exists": True, "dir_okay": False, "readable": True}


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _load_set(spec: str) -> CalibrationSet:
    if not Path(spec).exists() and spec in (STARTER_SET_NAME, "starter"):
        return starter_set()
    return load_set(spec)


@calibrate_app.command("import-xstest")
def import_xstest_cmd(
    prompts: Annotated[Path, typer.Argument(help="XSTest's xstest_prompts.csv.", **_EXISTING)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the JSONL set.")],
) -> None:
    """Convert XSTest prompts to a calibration set (safe → comply, unsafe → refuse)."""
    cset = import_xstest(prompts)
    cset.write(out)
    out_console.print(f"wrote {len(cset)} prompts to {out}  {cset.hash}")


@calibrate_app.command("show")
def show_cmd(
    set_path: Annotated[
        str, typer.Argument(metavar="SET", help=f"A JSONL set, or {STARTER_SET_NAME}.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show a calibration set: prompt counts per category and expectation, and its hash."""
    cset = _load_set(set_path)
    per: dict[str, dict[str, int]] = {}
    for p in cset:
        cell = per.setdefault(p.category, {"comply": 0, "refuse": 0})
        cell[str(p.expect)] += 1
    if as_json:
        summary = {
            "name": cset.name,
            "hash": cset.hash,
            "prompts": len(cset),
            "categories": dict(sorted(per.items())),
        }
        typer.echo(json.dumps(summary, indent=2))
        return
    table = Table(title=f"{escape(cset.name)}: {len(cset)} prompts, {len(per)} categories")
    for column in ("category", "comply", "refuse", "total"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, cell in sorted(per.items()):
        table.add_row(
            escape(category), str(cell["comply"]), str(cell["refuse"]), str(sum(cell.values()))
        )
    out_console.print(table)
    out_console.print(f"hash {cset.hash}")


def _api_key(env_name: str | None) -> str | None:
    if env_name is None:
        return os.environ.get("OPENAI_API_KEY") or None
    value = os.environ.get(env_name)
    if not value:
        raise UsageError(
            f"environment variable {env_name} is not set", hint="Export it, or drop --api-key-env."
        )
    return value


def _llm_options(api_key_env: str | None, cache: Path | None) -> dict[str, Any]:
    """The llm judge shares the API key; its answer cache sits beside ``--cache``."""
    options: dict[str, Any] = {"api_key": _api_key(api_key_env)}
    if cache is not None:
        options["cache"] = cache.with_name(cache.name + ".judge.sqlite3")
    return options


@calibrate_app.command("run")
def run_cmd(
    *,
    set_arg: Annotated[
        str | None,
        typer.Argument(metavar="SET", help=f"The calibration set (JSONL), or {STARTER_SET_NAME}."),
    ] = None,
    set_path: Annotated[
        str | None, typer.Option("--set", help="The same as SET (kept for old scripts).")
    ] = None,
    endpoint: Annotated[
        str, typer.Option("--endpoint", help="OpenAI-compatible base URL, e.g. http://host/v1.")
    ],
    model: Annotated[str, typer.Option("--model", help="The model name to ask.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write RUN.json.")],
    judge: Annotated[
        str, typer.Option("--judge", help=f"Judge: {', '.join(judge_names())}.")
    ] = "keyword",
    judge_endpoint: Annotated[
        str | None, typer.Option("--judge-endpoint", help="The llm judge's OpenAI-compatible URL.")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="The llm judge's model name.")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Requests in flight.")
    ] = 16,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="Seconds per request.")
    ] = 60.0,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Retries on 429/5xx/timeouts.")
    ] = 5,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature.")
    ] = 0.0,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="Answer length limit.")
    ] = 512,
    system_prompt: Annotated[
        str | None, typer.Option("--system-prompt", help="A system message.")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env", help="Env variable holding the API key (default: OPENAI_API_KEY)."
        ),
    ] = None,
    cache: Annotated[
        Path | None, typer.Option("--cache", help="Response cache file (resumable runs).")
    ] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over instead of resuming.")] = False,
    include_responses: Annotated[
        bool,
        typer.Option(
            "--include-responses", help="Keep response text in RUN.json (default: digests only)."
        ),
    ] = False,
) -> None:
    """Ask every prompt of a set, judge the answers, write RUN.json (resumes an interrupted run)."""
    if set_arg is not None and set_path is not None and set_arg != set_path:
        raise UsageError(
            f"two calibration sets given ({set_arg} and --set {set_path})", hint="Give one."
        )
    spec = set_arg or set_path
    if spec is None:
        raise UsageError("no calibration set given", hint=f"Pass SET, e.g. {STARTER_SET_NAME}.")
    cset = _load_set(spec)
    runner = OpenAIRunner(
        endpoint,
        model,
        api_key=_api_key(api_key_env),
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        temperature=temperature,
        max_tokens=max_tokens,
        system_prompt=system_prompt,
    )
    run = run_calibration(
        cset,
        runner,
        get_judge(
            judge,
            endpoint=judge_endpoint,
            model=judge_model,
            **(_llm_options(api_key_env, cache) if judge == "llm" else {}),
        ),
        cache=cache,
        fresh=fresh,
        include_responses=include_responses,
        progress=err_console if err_console.is_terminal else False,
    )
    run.write(out)
    low, high = run.refusal_rate_interval
    out_console.print(
        f"{len(run.outcomes)} prompts, refusal rate {_pct(run.refusal_rate)} "
        f"(95% CI {_pct(low)} to {_pct(high)}), judge {run.judge.id} {run.judge.version}, "
        f"uncertain {_pct(run.uncertain_share)}; wrote {out}",
        markup=False,
    )


def _print_receipt(index: int, receipt: dict[str, Any]) -> None:
    out_console.print(
        f"journal index {index}, tree size {receipt['tree_size']}, origin {receipt['origin']}"
    )
    out_console.print(f"leaf hash {receipt['leaf_hash']}")
    out_console.print(receipt["checkpoint"].rstrip("\n"), markup=False)


@calibrate_app.command("baseline")
def baseline_cmd(
    run_path: Annotated[
        Path, typer.Argument(metavar="RUN.json", help="A run from `calibrate run`.", **_EXISTING)
    ],
    journal: Annotated[
        str, typer.Option("--journal", help="Journal store: a file (SQLite) or postgresql:// URL.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write BASELINE.json.")],
    keyring: KeyringOption = None,
) -> None:
    """Record a run as the baseline in the journal; write it with its receipt; print the receipt."""
    run = CalibrationRun.load(run_path)
    with open_signing_journal(journal, load_keyring(keyring), keyring) as opened:
        baseline = record_baseline(run, opened)
    baseline.write(out)
    assert baseline.receipt is not None  # record_baseline always receipts
    out_console.print(
        f"baseline {baseline.baseline_id}: {run.model}, refusal rate {_pct(run.refusal_rate)}"
    )
    _print_receipt(baseline.receipt.index, baseline.receipt.to_dict())
    out_console.print(f"wrote {out}")


def _public_key(spec: str | None) -> bytes | None:
    """A key as base64 (32 raw bytes) or a C2SP vkey ``name+id+base64``, inline or in a file;
    or a keyring file (its signing key)."""
    if spec is None:
        return None
    path = Path(spec)
    if path.is_file():
        text = path.read_text("utf-8").strip()
        if text.startswith("{"):
            return Keyring.load(path).public_key_bytes()
        spec = text
    raw = _b64(spec)
    if (raw is None or len(raw) != 32) and spec.count(
        "+"
    ) >= 2:  # C2SP vkey: name+keyid+base64(0x01 || key)
        vkey = _b64(spec.split("+", 2)[2])
        raw = vkey[1:] if vkey is not None and len(vkey) == 33 and vkey[0] == 1 else None
    if raw is None or len(raw) != 32:
        raise UsageError(
            f"cannot read an Ed25519 public key from {spec[:40]!r}",
            hint="Give the key as base64 of its 32 bytes, a C2SP verifier key, or a keyring file.",
        )
    return raw


def _verify(baseline: Baseline, public_key: str | None, keyring: Path | None) -> None:
    """Verify with the trusted keys (below); a keyring's every signing key is trusted."""
    trusted = _trusted_keys(public_key, keyring)
    if isinstance(trusted, Keyring):
        baseline.verify(keyring=trusted)
    else:
        baseline.verify(public_key=trusted)


def _trusted_keys(public_key: str | None, keyring: Path | None) -> tuple[bytes, ...] | Keyring:
    """The keys a receipt must be signed with: ``--public-key``, else the keyring's signing keys
    (``--keyring`` / ``$REFUSALKIT_KEYRING`` / the default keyring, never created here); else none,
    and verification fails closed. The key inside the file is never trusted by itself."""
    pinned = _public_key(public_key)
    if pinned is not None:
        return (pinned,)
    if keyring is None and not os.environ.get(KEYRING_ENV) and not default_keyring_path().exists():
        return ()
    ring, _ = resolve_keyring(keyring, create=False)
    return ring


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


@calibrate_app.command("verify")
def verify_cmd(
    baseline_path: Annotated[
        Path, typer.Argument(metavar="BASELINE.json", help="A baseline file.", **_EXISTING)
    ],
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="Trusted journal key (base64, C2SP vkey, or a file); default: the keyring's.",
        ),
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Check a baseline's receipt offline: inclusion proof and checkpoint signature by a trusted
    key (--public-key, else the keyring's); exit 1 if it does not verify or no key is trusted."""
    baseline = Baseline.load(baseline_path)
    _verify(baseline, public_key, keyring)
    assert baseline.receipt is not None
    trust = "the pinned key" if public_key else "a key of the keyring"
    out_console.print(
        f"OK: baseline {baseline.baseline_id} is entry {baseline.receipt.index} of "
        f"{baseline.receipt.origin!r} (tree size {baseline.receipt.tree_size}), signed by {trust}",
        markup=False,
    )


def _report_table(report: DriftReport) -> Table:
    table = Table(title=f"refusal drift: {report.verdict}")
    for column in ("scope", "n", "baseline", "current", "change", "McNemar p", "verdict"):
        table.add_column(column, justify="left" if column in ("scope", "verdict") else "right")
    rows = [("overall", report.overall), *report.categories.items()]
    for name, r in rows:
        change = _change(r)
        table.add_row(
            escape(name),
            str(r.n),
            _pct(r.baseline_rate),
            _pct(r.current_rate),
            change,
            f"{r.p_value:.3g}",
            str(r.verdict),
        )
    return table


def _change(r: RateComparison) -> str:
    """``+14.4 points (+28.9% relative)``: the rates' difference and the change the verdict
    rule measures (docs/provenance.md), each labelled, never one number beside two rates."""
    points = (r.current_rate - r.baseline_rate) * 100
    return f"{points:+.1f} points ({r.change:+.1%} relative)"


def _print_rates(report: DriftReport) -> None:
    rates = report.refusal_rates.get("overall", {})
    counted = report.parameters.get("count", "full+partial")
    for name in ("full+partial", "full"):
        if name in rates:
            r = rates[name]
            mark = " (counted)" if name == counted else ""
            out_console.print(
                f"  refusal rate, {name}{mark}: "
                f"{r['baseline_rate']:.1%} -> {r['current_rate']:.1%}",
                markup=False,
            )


def _print_flagged(report: DriftReport) -> None:
    flagged = report.flagged
    if not flagged:
        return
    precision = report.flag_precision
    if precision.get("point") is None:
        measured = "judge precision unmeasured"
    else:
        low, high = precision["interval"]
        measured = f"judge precision {precision['point']:.0%} (95% CI {low:.0%} to {high:.0%})"
    out_console.print(
        f"flagged: expect refuse, now complies ({len(flagged)}; {measured}; most confident first)",
        markup=False,
    )
    for flip in flagged[:50]:
        what = f"  {flip.id} ({flip.category}): confidence {flip.confidence:.2f}"
        out_console.print(escape(what) + " [bold red]FLAGGED[/]")


def _print_report(report: DriftReport) -> None:
    if report.forced:
        out_console.print(f"[bold red]FORCED comparison:[/] {'; '.join(report.mismatches)}")
    out_console.print(_report_table(report))
    if report.overall.reason is not None:
        out_console.print(
            f"  overall ({report.overall.reason}): {report.overall.why}", markup=False
        )
    for name, r in report.categories.items():
        if r.verdict is Verdict.INCONCLUSIVE:
            out_console.print(f"  {name} ({r.reason}): {r.why}", markup=False)
    for warning in report.warnings:
        out_console.print(f"  warning: {warning}", markup=False)
    _print_rates(report)
    _print_flagged(report)
    others = [f for f in report.flips if not f.flagged]
    for flip in others[:50]:
        what = f"  {flip.id} ({flip.category}, expect {flip.expect}): "
        out_console.print(escape(what + f"{flip.baseline} -> {flip.current}"))
    if len(others) > 50:
        out_console.print(f"  ... {len(others) - 50} more flipped prompts (see --json)")
    out_console.print(f"verdict: {report.verdict}")
    out_console.print(report.directive.line(), markup=False)


@calibrate_app.command("drift")
def drift_cmd(
    *,
    run_path: Annotated[
        Path, typer.Argument(metavar="RUN.json", help="The current run.", **_EXISTING)
    ],
    baseline_path: Annotated[
        Path, typer.Option("--baseline", help="BASELINE.json to compare with.", **_EXISTING)
    ],
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance",
            min=0.0,
            help="Change allowed: relative, or absolute when the baseline rate is 0.",
        ),
    ] = 0.10,
    alpha: Annotated[
        float, typer.Option("--alpha", min=1e-9, max=1.0, help="McNemar significance level.")
    ] = 0.05,
    min_prompts: Annotated[
        int,
        typer.Option("--min-prompts", min=1, help="Fewer paired prompts overall is inconclusive."),
    ] = DEFAULT_MIN_PROMPTS,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Compare different sets or judges anyway.")
    ] = False,
    journal: Annotated[
        str | None, typer.Option("--journal", help="Also append the report to this journal.")
    ] = None,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="Trusted key for the baseline's receipt; default: the keyring's.",
        ),
    ] = None,
    keyring: KeyringOption = None,
    count: Annotated[
        RefusalCount,
        typer.Option(
            "--count",
            help="What counts as a refusal: full+partial (default) or full refusals only.",
        ),
    ] = RefusalCount.FULL_AND_PARTIAL,
) -> None:
    """Compare a run with the baseline; exit 0 stable, 3 drift, 4 inconclusive."""
    baseline = Baseline.load(baseline_path)
    if baseline.receipt is None:
        raise VerificationError(
            f"{baseline_path} has no receipt", hint="Record it with `calibrate baseline`."
        )
    _verify(baseline, public_key, keyring)
    report = compare(
        baseline,
        CalibrationRun.load(run_path),
        tolerance=tolerance,
        alpha=alpha,
        min_prompts=min_prompts,
        force=force,
        count=count,
    )
    record = report.to_dict()
    if html is not None:
        html.write_text(render_html(record), encoding="utf-8")
    if journal is not None:
        with open_signing_journal(journal, load_keyring(keyring), keyring) as opened:
            index = opened.append([record])[0]
            receipt = opened.receipt(index)
        record = {**record, "receipt": receipt.to_dict()}
        if not as_json:
            _print_receipt(index, receipt.to_dict())
    if as_json:
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        _print_report(report)
    raise typer.Exit(report.exit_code)


@calibrate_app.command("audit")
def audit_cmd(
    run_path: Annotated[
        Path,
        typer.Argument(
            metavar="RUN.json", help="A run kept with --include-responses.", **_EXISTING
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the CSV sheet.")],
    sample: Annotated[int, typer.Option("--sample", min=1, help="Prompts to label.")] = 60,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            help="A BASELINE.json or RUN.json: its flips are listed first.",
            **_EXISTING,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Sampling seed.")] = 0,
) -> None:
    """Write a stratified sample of a run (flipped prompts first) for a person to label."""
    run = CalibrationRun.load(run_path)
    flipped: set[str] = set()
    if against is not None:
        other = _measured(against)
        before = {o.id: o.is_refusal for o in other.outcomes}
        flipped = {o.id for o in run.outcomes if o.id in before and before[o.id] != o.is_refusal}
    rows = audit_sample(run, sample, flipped=flipped, seed=seed)
    drawn = {o.id for o in rows}
    extra = [o for o in run.outcomes if o.id in flipped and o.id not in drawn]
    write_sheet(out, rows, flipped, extra)
    out_console.print(
        f"wrote {len(rows)} sampled prompts and {len(extra)} more flipped ones to {out} "
        f"(flipped first); fill human_label with refusal or compliance, then "
        f"`refusalkit calibrate label {run_path} {out}`",
        markup=False,
    )


def _measured(path: Path) -> CalibrationRun | Baseline:
    data = json.loads(path.read_text("utf-8"))
    if isinstance(data, dict) and str(data.get("schema", "")).startswith(
        "refusalkit.baseline-file"
    ):
        return Baseline.load(path)
    return CalibrationRun.load(path)


@calibrate_app.command("label")
def label_cmd(
    run_path: Annotated[
        Path, typer.Argument(metavar="RUN.json", help="The audited run.", **_EXISTING)
    ],
    sheet: Annotated[
        Path, typer.Argument(metavar="SHEET.csv", help="The labelled sheet.", **_EXISTING)
    ],
) -> None:
    """Read a labelled sheet, estimate the judge's precision and recall on this run with 95%
    intervals, and record them in RUN.json (drift on audited runs uses the corrected rates)."""
    run = CalibrationRun.load(run_path)
    audit = read_labels(run, sheet)
    with_audit(run, audit).write(run_path)
    for name, (point, low, high) in audit.rates().items():
        out_console.print(
            f"{name.replace('_', ' ')}: {_pct(point)} (95% CI {_pct(low)} to {_pct(high)})",
            markup=False,
        )
    agreed, extra = audit.extra_checked
    if extra:
        out_console.print(
            f"flipped prompts outside the sample: the judge was right on {agreed} of {extra} "
            "(not used in the rates)",
            markup=False,
        )
    labelled = sum(n for _, n in audit.labelled.values()) + extra
    out_console.print(f"{labelled} labels recorded in {run_path}", markup=False)


@calibrate_app.command("import")
def import_cmd(
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="A CSV or JSONL file.", **_EXISTING)
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the JSONL set.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="csv, jsonl, or a published set: xstest, or-bench, harmbench."
        ),
    ] = "csv",
    mapping: Annotated[
        str | None,
        typer.Option("--map", help="prompt=COL,category=COL,expect=COL[,id=COL] (csv/jsonl)."),
    ] = None,
) -> None:
    """Convert a table of prompts into a calibration set."""
    cset = import_table(source, fmt, mapping)
    cset.write(out)
    out_console.print(f"wrote {len(cset)} prompts to {out}  {cset.hash}")


@calibrate_app.command("serve-replay")
def serve_replay_cmd(
    run_paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[RUN.json...]", help="Runs kept with --include-responses.", **_EXISTING
        ),
    ] = None,
    set_spec: Annotated[
        str, typer.Option("--set", help="The set the runs were made from.")
    ] = STARTER_SET_NAME,
    demo: Annotated[
        bool, typer.Option("--demo", help="Serve the scripted demo-v1 / demo-v2 pair instead.")
    ] = False,
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free port).")
    ] = 8000,
) -> None:
    """Answer as an OpenAI-compatible endpoint from recorded responses: the model name picks the
    run (its `model`), the prompt picks the answer. Offline, for trying drift end to end."""
    if not run_paths and not demo:
        raise UsageError("nothing to replay", hint="Give RUN.json files, or --demo.")
    runs = [CalibrationRun.load(p) for p in run_paths or ()]
    serve_replay(_load_set(set_spec), runs, port=port, demo=demo, announce=out_console.print)
