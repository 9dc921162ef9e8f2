"""``refusalkit journal``: append, checkpoint, prove, verify, query, stats, export, witness.

Contracts: docs/design/journal.md.

The store is always the first argument: an SQLite file path or a ``postgresql://`` URL. ``verify``
exits 0 only when every check passes, else 1 naming the first bad index.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from refusalkit._durable import write_durably
from refusalkit.cli._app import app
from refusalkit.cli._common import (
    KeyringOption,
    err_console,
    load_keyring,
    open_signing_journal,
    out_console,
)
from refusalkit.errors import KeyringError, NotAReceiptError, UsageError, VerificationError
from refusalkit.journal import (
    EquivocationError,
    Journal,
    NoteVerifier,
    Receipt,
    UntrustedKeyError,
    VerifyReport,
    bundle_checkpoints,
    export_bundle,
    normalise_time,
    open_journal,
    parse_checkpoint_body,
    parse_note,
    read_checkpoint_file,
    verify_bundle,
    verify_proof,
    verify_receipt,
)
from refusalkit.keyring import Keyring, resolve_keyring
from refusalkit.model import canonical_json

__all__ = ["app", "journal_app"]

journal_app = typer.Typer(
    name="journal",
    help="The tamper-evident journal: an RFC 9162 Merkle log with signed C2SP checkpoints.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
prove_app = typer.Typer(
    name="prove", help="RFC 9162 proofs as JSON (lowercase hex hashes).", no_args_is_help=True
)
journal_app.add_typer(prove_app, name="prove")
app.add_typer(journal_app, name="journal")

StoreArg = Annotated[
    str,
    typer.Argument(
        help="Journal store: an SQLite file path or a postgresql:// URL.", show_default=False
    ),
]
OriginOption = Annotated[
    str | None,
    typer.Option(
        "--origin", help="Origin (log name) for a new journal; must match an existing one."
    ),
]
_BATCH = 1000
_TIME_HELP = "RFC 3339 time (Z or an offset) or a date YYYY-MM-DD (UTC), inclusive."


@contextmanager
def _open(
    store: str, keyring: Path | None, origin: str | None = None, *, create: bool = False
) -> Iterator[Journal]:
    """The journal at ``store``; only ``append`` creates a missing one (``create=True``).

    The signer state lives beside the keyring file, so every signing verb checks the store
    against the last checkpoint this keyring signed (docs/design/journal.md, "Signer state").
    """
    ring = load_keyring(keyring)
    with open_signing_journal(store, ring, keyring, origin=origin, create=create) as journal:
        yield journal


def _emit(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False))


def _records(handle: TextIO, name: str) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{name}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise UsageError(f"{name}:{number}: a record must be a JSON object")
        yield record


@journal_app.command("append")
def append_cmd(
    store: StoreArg,
    file: Annotated[str, typer.Argument(help="JSONL file of records, or - for stdin.")] = "-",
    origin: OriginOption = None,
    keyring: KeyringOption = None,
) -> None:
    """Append JSONL records (one JSON object a line); prints the index range as JSON."""
    source = sys.stdin if file == "-" else _open_text(file)
    appended: list[int] = []
    with _open(store, keyring, origin, create=True) as journal:
        batch: list[dict[str, Any]] = []
        for record in _records(source, "stdin" if file == "-" else file):
            batch.append(record)
            if len(batch) == _BATCH:
                appended += journal.append(batch)
                batch = []
        appended += journal.append(batch)
        size = journal.size()
    first, last = (appended[0], appended[-1]) if appended else (None, None)
    _emit({"appended": len(appended), "first": first, "last": last, "size": size})


def _open_text(path: str) -> TextIO:
    try:
        return Path(path).open(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc


@journal_app.command("checkpoint")
def checkpoint_cmd(
    store: StoreArg,
    origin: OriginOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the signed note to this file.")
    ] = None,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="The signer state is lost and you trust the store as it is: verify it fully "
            "and adopt its latest checkpoint.",
        ),
    ] = False,
    keyring: KeyringOption = None,
) -> None:
    """Sign a checkpoint for the current size and print it (a C2SP signed note).

    Signs only when the store's tree extends the last checkpoint this keyring signed for the log
    (its signer state, beside the keyring); otherwise signs nothing and exits 1.
    """
    with _open(store, keyring, origin) as journal:
        note = journal.checkpoint(adopt=adopt)
    if out is not None:
        write_durably(out, note)
    typer.echo(note, nl=False)


@prove_app.command("inclusion")
def prove_inclusion(
    store: StoreArg,
    index: Annotated[
        int, typer.Option("--index", help="Entry index (0-based).", show_default=False)
    ],
    size: Annotated[
        int | None, typer.Option("--size", help="Tree size (default: current).")
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Inclusion proof of one entry (RFC 9162 §2.1.3)."""
    with _open(store, keyring) as journal:
        _emit(journal.inclusion_proof(index, size))


@prove_app.command("consistency")
def prove_consistency(
    store: StoreArg,
    old: Annotated[int, typer.Option("--old", help="The older tree size.", show_default=False)],
    new: Annotated[
        int | None, typer.Option("--new", help="The newer size (default: current).")
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Consistency proof between two tree sizes (RFC 9162 §2.1.4)."""
    with _open(store, keyring) as journal:
        _emit(journal.consistency_proof(old, new))


def _trusted(public_keys: list[str], keyring: Path | None) -> list[NoteVerifier]:
    """What ``verify`` trusts: ``--public-key`` keys, else the keyring's public keys.

    The keyring is looked up as elsewhere (``--keyring``, ``$REFUSALKIT_KEYRING``, the default
    one) but never created: a new keyring could vouch for nothing. Keyring keys come back with
    an empty name: the caller names them after the log's origin.
    """
    if public_keys:
        return [NoteVerifier.parse(k) for k in public_keys]
    try:
        ring, _ = resolve_keyring(keyring, create=False)
    except KeyringError as exc:
        raise VerificationError(
            "no trusted key: give --public-key, or a keyring holding the log's signing key",
            hint="Pass the verifier key you got from the log's operator: "
            "--public-key NAME+ID+BASE64.",
        ) from exc
    return [NoteVerifier("", 0, ring.public_key_bytes(kid)) for kid in ring.signing_keys]


def _named(keys: list[NoteVerifier], origin: str) -> list[NoteVerifier]:
    """Keyring keys (no name yet) under the log's origin, the key name its checkpoints use."""
    return [k if k.name else NoteVerifier.for_key(origin, k.public_key) for k in keys]


def _anchors(files: list[Path]) -> list[tuple[str, str]]:
    return [(str(f), read_checkpoint_file(f)) for f in files]


def _print_report(report: VerifyReport, as_json: bool) -> None:
    if as_json:
        _emit(report.to_dict())
        return
    out_console.print(
        f"[bold green]ok[/] {report.origin}: {report.size} entries, "
        f"{report.checkpoints} checkpoint(s) verified, root {report.root}"
    )
    if report.unsigned_entries:
        out_console.print(
            f"note: the last {report.unsigned_entries} entries are not yet in a checkpoint"
        )


def _verify_store(journal: Journal, **kwargs: Any) -> VerifyReport:
    total = journal.size()
    columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=total < 50_000) as bar:
        task = bar.add_task("verify", total=total)
        return journal.verify(progress=lambda done: bar.update(task, completed=done), **kwargs)


def _signer_anchor(journal: Journal) -> list[tuple[str, str]]:
    """The signer's own memory, when this keyring has signed the log: the store must extend it."""
    remembered = journal.signer.load() if journal.signer is not None else None
    return (
        [(f"signer state {journal.signer.path}", remembered[1])]
        if remembered and journal.signer
        else []
    )


def _check_store(
    store: str, keyring: Path | None, keys: list[str], anchors: list[tuple[str, str]]
) -> tuple[VerifyReport, str | None]:
    if keys:  # an examiner with the log's key needs no keyring, and none is created
        with open_journal(store, Keyring.generate(), create=False) as journal:
            trusted = _named(_trusted(keys, keyring), journal.origin)
            report = _verify_store(journal, anchors=anchors, trusted=trusted)
            return report, journal.latest_checkpoint()
    with _open(store, keyring) as journal:
        trusted = _named(_trusted(keys, keyring), journal.origin)
        report = _verify_store(
            journal, anchors=[*anchors, *_signer_anchor(journal)], trusted=trusted
        )
        return report, journal.latest_checkpoint()


def _check_bundle(
    bundle: Path, keyring: Path | None, keys: list[str], anchors: list[tuple[str, str]]
) -> tuple[VerifyReport, str | None]:
    trusted = _trusted(keys, keyring)
    pinned = {"trusted": trusted} if keys else {"public_keys": [k.public_key for k in trusted]}
    report = verify_bundle(bundle, anchors=anchors, **pinned)
    notes = bundle_checkpoints(bundle)
    return report, notes[-1] if notes else None


def _check_quorum(note: str | None, witness_keys: list[str], quorum: int | None) -> str:
    """``quorum`` valid cosignatures by ``witness_keys`` on the latest checkpoint, else exit 1."""
    from refusalkit.witness import CosignerKey, verify_cosignatures  # noqa: PLC0415

    keys = [CosignerKey.parse(k) for k in witness_keys]
    need = quorum if quorum is not None else 1
    if need > len(keys):
        raise UsageError(f"a quorum of {need} needs at least {need} --witness-key keys")
    found = verify_cosignatures(note, keys) if note else []
    if len(found) < need:
        raise VerificationError(
            f"the latest checkpoint has {len(found)} valid cosignature(s) from the "
            f"{len(keys)} witness key(s) you passed; the quorum is {need}",
            hint="Honest witnesses never cosign a fork. If the log is honest, have the checkpoint "
            "witnessed: `refusalkit journal witness STORE --witness URL`.",
        )
    return ", ".join(sorted(c.name for c in found))


def _offline(
    receipt: Path | None,
    proof: Path | None,
    entry: Path | None,
    checkpoint: list[Path],
    keys: list[str],
    keyring: Path | None,
) -> str:
    """``--receipt`` / ``--proof``: check what the service returned, with nothing else."""
    if receipt is not None:
        found = _receipt_file(receipt)
        key = keys[0] if keys else _trusted([], keyring)[0].public_key
        record = Path(entry).read_bytes() if entry is not None else None
        verify_receipt(_entry_bytes(record), found, public_key=key)
        what = f"entry {found.index}" if record is not None else f"leaf {found.leaf_hash}"
        return f"{what} is in {found.origin} at size {found.tree_size} (receipt verified)"
    assert proof is not None
    if not checkpoint:
        raise UsageError("--proof needs the signed checkpoint(s) it is for: --checkpoint FILE")
    notes = [read_checkpoint_file(c) for c in checkpoint]
    origin = parse_checkpoint_body(parse_note(notes[0])[0]).origin
    return verify_proof(_json_file(proof), notes, _named(_trusted(keys, keyring), origin))


def _receipt_file(path: Path) -> Receipt:
    """The receipt in ``path``; a file that holds something else says what it holds."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotAReceiptError(f"{path} is not a journal receipt: it is not JSON") from exc
    try:
        return Receipt.from_dict(data)
    except NotAReceiptError as exc:
        raise NotAReceiptError(f"{path} is {exc.message}", hint=exc.hint) from None


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise VerificationError(f"{path} is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise VerificationError(f"{path} is not a JSON object")
    return data


def _entry_bytes(raw: bytes | None) -> bytes | None:
    """An entry file: its exact bytes, or a JSON record (re-encoded as RFC 8785)."""
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return raw
    return canonical_json(record) if isinstance(record, dict) else raw


@journal_app.command("verify")
def verify_cmd(
    store: Annotated[
        str | None, typer.Argument(help="Journal store (path or postgresql:// URL).")
    ] = None,
    bundle: Annotated[
        Path | None, typer.Option("--bundle", help="Verify an exported bundle instead.")
    ] = None,
    receipt: Annotated[
        Path | None, typer.Option("--receipt", help="Verify a receipt (JSON) from the service.")
    ] = None,
    entry: Annotated[
        Path | None, typer.Option("--entry", help="With --receipt: the entry (JSON or bytes).")
    ] = None,
    proof: Annotated[
        Path | None,
        typer.Option("--proof", help="Verify an inclusion or consistency proof (JSON)."),
    ] = None,
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option("--checkpoint", help="With --proof: the signed checkpoint(s) it is for."),
    ] = None,
    public_key: Annotated[
        list[str] | None,
        typer.Option(
            "--public-key",
            help="Trusted verifier key NAME+ID+BASE64 (repeatable), as `journal public-key` "
            "prints it; default: the keyring's keys.",
        ),
    ] = None,
    trusted_checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            "--trusted-checkpoint",
            help="A checkpoint you hold (signed note or bundle); the log must extend it "
            "(repeatable).",
        ),
    ] = None,
    witness_key: Annotated[
        list[str] | None,
        typer.Option("--witness-key", help="A witness's cosigner key NAME+ID+BASE64 (repeatable)."),
    ] = None,
    quorum: Annotated[
        int | None,
        typer.Option("--quorum", min=1, help="Valid cosignatures required (default 1)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    keyring: KeyringOption = None,
) -> None:
    """Recompute the tree and check every signed checkpoint; exit 1 naming the first bad index.

    Or check one receipt (--receipt) or proof (--proof with --checkpoint) offline.
    """
    modes = [m for m in (store, bundle, receipt, proof) if m is not None]
    if len(modes) != 1:
        raise UsageError("give one of: STORE, --bundle FILE, --receipt FILE, --proof FILE")
    keys, anchors = public_key or [], _anchors(trusted_checkpoint or [])
    try:
        if receipt is not None or proof is not None:
            said = _offline(receipt, proof, entry, checkpoint or [], keys, keyring)
            out_console.print(f"[bold green]ok[/] {said}")
            return
        if bundle is not None:
            report, latest = _check_bundle(bundle, keyring, keys, anchors)
        else:
            assert store is not None
            report, latest = _check_store(store, keyring, keys, anchors)
        witnesses = _check_quorum(latest, witness_key, quorum) if witness_key else ""
    except EquivocationError as exc:
        typer.echo(exc.evidence.render(), nl=False)
        raise
    except UntrustedKeyError:
        raise
    except VerificationError as exc:
        where = f"first bad index: {exc.index}: " if exc.index is not None else ""
        raise VerificationError(f"{where}{exc.message}", index=exc.index, hint=exc.hint) from exc
    _print_report(report, as_json)
    if witnesses and not as_json:
        out_console.print(f"cosigned by: {witnesses}")


@journal_app.command("query")
def query_cmd(
    store: StoreArg,
    action: Annotated[
        str | None, typer.Option("--action", help="allow | audit | deny | block.")
    ] = None,
    reason_code: Annotated[str | None, typer.Option("--reason-code", help="A reason code.")] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="The matched rule id.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="subject.agent.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="subject.session.")] = None,
    since: Annotated[str | None, typer.Option("--since", help=_TIME_HELP)] = None,
    until: Annotated[str | None, typer.Option("--until", help=_TIME_HELP)] = None,
    schema: Annotated[
        str | None, typer.Option("--schema", help="Record kind, e.g. refusalkit.decision/v1.")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="At most this many records.", min=0)
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Print matching records in index order as JSONL."""
    since, until = _window(since, until)
    with _open(store, keyring) as journal:
        for _, record in journal.query(
            schema=schema,
            action=action,
            reason_code=reason_code,
            matched_rule=rule,
            agent=agent,
            session=session,
            since=since,
            until=until,
            limit=limit,
        ):
            _emit(record)


def _window(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """``--since``/``--until`` as the journal indexes times; exit 2 on anything not RFC 3339."""
    return (
        None if since is None else normalise_time(since, name="--since"),
        None if until is None else normalise_time(until, name="--until", end_of_day=True),
    )


def _stats_table(title: str, counts: dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(title.rsplit(maxsplit=1)[-1])
    table.add_column("count", justify="right")
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(key, str(count))
    return table


@journal_app.command("stats")
def stats_cmd(
    store: StoreArg,
    since: Annotated[str | None, typer.Option("--since", help=_TIME_HELP)] = None,
    until: Annotated[str | None, typer.Option("--until", help=_TIME_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    keyring: KeyringOption = None,
) -> None:
    """Counts of records by action, reason code and rule."""
    since, until = _window(since, until)
    with _open(store, keyring) as journal:
        stats = journal.stats(since=since, until=until)
    if as_json:
        _emit(stats)
        return
    out_console.print(f"{stats['total']} records")
    for key, title in (
        ("by_action", "by action"),
        ("by_reason_code", "by reason code"),
        ("by_rule", "by rule"),
    ):
        out_console.print(_stats_table(title, stats[key]))


@journal_app.command("public-key")
def public_key_cmd(store: StoreArg, keyring: KeyringOption = None) -> None:
    """Print the journal's verifier key(s), NAME+ID+BASE64, for auditors' --public-key."""
    with _open(store, keyring) as journal:
        for verifier in journal.trusted():
            typer.echo(verifier.vkey)


@journal_app.command("witness")
def witness_cmd(
    store: StoreArg,
    witness: Annotated[
        list[str],
        typer.Option("--witness", help="A witness URL prefix (repeatable).", show_default=False),
    ],
    keyring: KeyringOption = None,
) -> None:
    """Have the latest checkpoint cosigned by witnesses (C2SP tlog-witness); store the lines.

    Exits 1 when no witness cosigned it.
    """
    from refusalkit.witness import collect_cosignatures  # noqa: PLC0415

    with _open(store, keyring) as journal:
        note = journal.latest_checkpoint()
        if note is None:
            raise UsageError(
                "the journal has no checkpoint to witness",
                hint=f"Sign one first: `refusalkit journal checkpoint {store}`.",
            )

        def proof(old: int, new: int) -> list[bytes]:
            return [bytes.fromhex(h) for h in journal.consistency_proof(old, new)["hashes"]]

        merged, outcomes = collect_cosignatures(note, witness, proof)
        journal.add_cosignatures(merged)
    for outcome in outcomes:
        if outcome.error:
            err_console.print(f"[bold red]refused[/] {outcome.url}: {outcome.error}")
        else:
            names = ", ".join(line.name for line in outcome.lines)
            out_console.print(f"[bold green]cosigned[/] {outcome.url}: {names}")
    if not any(o.lines for o in outcomes):
        raise VerificationError(
            "no witness cosigned the latest checkpoint",
            hint="A witness refuses a checkpoint that does not extend the last one it cosigned "
            "for this log (or a log it was not told about: `refusalkit witness add-log`).",
        )


@journal_app.command("export")
def export_cmd(
    store: StoreArg,
    out: Annotated[
        Path, typer.Option("--out", help="Bundle file to write (JSON).", show_default=False)
    ],
    keyring: KeyringOption = None,
) -> None:
    """Export entries, checkpoints, proofs and public keys as one bundle for offline audit."""
    with _open(store, keyring) as journal:
        path = export_bundle(journal, out)
        size = journal.size()
    err_console.print(
        f"wrote {path} ({size} entries); check it with `refusalkit journal verify --bundle {path}`"
    )
