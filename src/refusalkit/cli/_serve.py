"""``refusalkit serve`` and ``refusalkit service keys ...``: the HTTP service and its API keys."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, err_console, load_keyring, out_console
from refusalkit.cli._engines import (
    CedarEntitiesOption,
    CedarSchemaOption,
    EngineOption,
    MappingOption,
    QueryOption,
    engine_spec,
)
from refusalkit.errors import ServiceError, UsageError

__all__ = ["app", "service_app"]

service_app = typer.Typer(help="Manage the HTTP service: its API keys.", no_args_is_help=True)
keys_app = typer.Typer(
    help="API keys: add (prints the key once), list, revoke.", no_args_is_help=True
)
service_app.add_typer(keys_app, name="keys")

KeysFile = Annotated[
    Path,
    typer.Option(
        "--keys-file",
        envvar="REFUSALKIT_KEYS_FILE",
        help="The keys file (JSON, mode 0600; keys are stored hashed).",
    ),
]


@app.command("serve")
def serve_command(
    *,
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Policy pack (YAML or JSON).")
    ] = None,
    journal: Annotated[
        str, typer.Option("--journal", help="Journal: a SQLite file or a postgresql:// URL.")
    ],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(help="Port to listen on (no common policy engine's; docs/service.md)."),
    ] = 8750,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (share the journal).")] = 1,
    keys_file: Annotated[
        Path | None,
        typer.Option(
            "--keys-file",
            envvar="REFUSALKIT_KEYS_FILE",
            help="API keys file (see `refusalkit service keys add`).",
        ),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="Serve without keys: every caller may do everything. Local development only.",
        ),
    ] = False,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request body accepted (413 above).")
    ] = 1_048_576,
    max_batch: Annotated[
        int, typer.Option(min=1, help="Most requests in one batch (413 above).")
    ] = 1000,
    deadline_ms: Annotated[
        float, typer.Option(help="Decision deadline; over it a decision is deny + unavailable.")
    ] = 50.0,
    origin: Annotated[
        str | None, typer.Option(help="Journal origin line (for a new journal).")
    ] = None,
    log_decisions: Annotated[
        bool,
        typer.Option(
            "--log-decisions", help="Log each decision's redacted form (never the request)."
        ),
    ] = False,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", help="uvicorn's access log.")
    ] = False,
    secure_cookies: Annotated[
        bool,
        typer.Option(
            "--secure-cookies",
            help="Dashboard cookie always Secure (behind a TLS-terminating proxy).",
        ),
    ] = False,
    checkpoint_every: Annotated[
        float,
        typer.Option(
            "--checkpoint-every",
            min=0.05,
            help="Sign a checkpoint this often (seconds) when the journal grew; reads never sign.",
        ),
    ] = 10.0,
    witness: Annotated[
        list[str] | None,
        typer.Option(
            "--witness",
            help="A witness URL prefix (C2SP tlog-witness) to cosign each new checkpoint "
            "(repeatable).",
        ),
    ] = None,
    keyring: KeyringOption = None,
    engine: EngineOption = None,
    mapping: MappingOption = None,
    query: QueryOption = None,
    cedar_schema: CedarSchemaOption = None,
    cedar_entities: CedarEntitiesOption = None,
) -> None:
    """Serve decisions, the journal and the dashboard over HTTP (FastAPI on uvicorn).

    Decisions come from the pack (--policy) or from an external engine (--engine).
    """
    from refusalkit.server import ServiceConfig, serve  # noqa: PLC0415 (server extras are optional)

    if keys_file is None and not insecure_no_auth:
        raise ServiceError(
            "no --keys-file: the service would be open to anyone",
            hint="Make a key with `refusalkit service keys add NAME --scopes decide,read "
            "--keys-file keys.json` and pass --keys-file keys.json (or --insecure-no-auth for "
            "local development).",
        )
    if insecure_no_auth:
        err_console.print(
            "[bold yellow]warning:[/] --insecure-no-auth: anyone who can reach "
            f"{host}:{port} may decide, read the journal and reload the pack"
        )
    spec = engine_spec(engine, mapping, query, cedar_schema, cedar_entities)
    if (policy is None) == (spec is None):
        raise UsageError("give either --policy PACK or --engine KIND:SOURCE")
    ring = load_keyring(keyring)
    _check_journal(journal, ring)
    config = ServiceConfig(
        policy=policy,
        journal=journal,
        keys_file=keys_file,
        keyring=keyring,
        insecure_no_auth=insecure_no_auth,
        max_body_bytes=max_body_bytes,
        max_batch=max_batch,
        deadline_ms=deadline_ms,
        origin=origin,
        log_decisions=log_decisions,
        engine=spec.to_dict() if spec is not None else None,
        secure_cookies=secure_cookies,
        checkpoint_every=checkpoint_every,
        witnesses=tuple(witness or ()),
    )
    serve(config, host=host, port=port, workers=workers, access_log=access_log)


def _check_journal(store: str, ring: object) -> None:
    from refusalkit.journal import open_journal  # noqa: PLC0415

    with open_journal(store, ring) as journal:  # type: ignore[arg-type]
        journal.size()


@keys_app.command("add")
def keys_add(
    name: Annotated[str, typer.Argument(help="A name for the key (who or what uses it).")],
    keys_file: KeysFile,
    scopes: Annotated[str, typer.Option(help="Comma-separated: decide, read, admin.")] = "decide",
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Revoke an active key of this name first, then make the new one."
        ),
    ] = False,
) -> None:
    """Create a key and print it, once, alone on standard output (only its hash is stored).

    What was done goes to standard error, so `KEY=$(refusalkit service keys add ...)` takes the
    key and nothing else. A name that has an active key is refused, unless --replace is given.
    """
    from refusalkit._internal.keys import KeyStore, parse_scopes  # noqa: PLC0415

    store = KeyStore(keys_file)
    wanted = parse_scopes(scopes)
    active = next((k for k in store.list_keys() if k.name == name and k.revoked is None), None)
    if active is not None and replace:
        store.revoke(name)
        err_console.print(f"revoked the old key {name!r} in {keys_file}", markup=False)
    elif active is not None:
        raise UsageError(
            f"{keys_file} has an active key named {name!r} (made {active.created})",
            hint="Its key was shown once, when it was made. Pass --replace to revoke it and "
            "make a new one, or pick another name.",
        )
    record, secret = store.add(name, wanted)
    err_console.print(
        f"added key {record.name!r} with scopes "
        f"{', '.join(sorted(s.value for s in record.scopes))} to {keys_file}",
        markup=False,
    )
    err_console.print("the key is shown once, on standard output; store it now", markup=False)
    typer.echo(secret)


@keys_app.command("list")
def keys_list(keys_file: KeysFile) -> None:
    """List the keys (names, scopes, dates; never the keys)."""
    from refusalkit._internal.keys import KeyStore  # noqa: PLC0415

    table = Table("name", "scopes", "created", "revoked", "hash")
    for key in KeyStore(keys_file).list_keys():
        table.add_row(
            key.name,
            ",".join(sorted(s.value for s in key.scopes)),
            key.created,
            key.revoked or "—",
            key.hash[:19] + "…",
        )
    out_console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    name: Annotated[str, typer.Argument(help="The key to revoke.")], keys_file: KeysFile
) -> None:
    """Revoke a key: it stops working at once (running services re-read the file)."""
    from refusalkit._internal.keys import KeyStore  # noqa: PLC0415

    record = KeyStore(keys_file).revoke(name)
    out_console.print(f"revoked key {record.name!r} at {record.revoked}")


app.add_typer(service_app, name="service")
