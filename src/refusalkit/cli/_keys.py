"""CLI verb group ``keys``: create, rotate and inspect keyrings (never printing key material)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, err_console, out_console
from refusalkit.keyring import KEYRING_ENV, Keyring, default_keyring_path, resolve_keyring

__all__ = ["keys_app"]

keys_app = typer.Typer(
    name="keys",
    help="Create, rotate and inspect keyrings (redaction and signing keys).",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")

KeyringPath = Annotated[
    Path | None,
    typer.Argument(
        metavar="PATH",
        help="Keyring file. Default: $REFUSALKIT_KEYRING, else the default keyring in your data "
        "directory, the one every command uses when given no --keyring.",
        show_default=False,
    ),
]


def _keyring_file(path: Path | None) -> Path:
    """PATH, else ``$REFUSALKIT_KEYRING``, else the default keyring: where every command looks."""
    if path is not None:
        return path
    named = os.environ.get(KEYRING_ENV)
    return Path(named) if named else default_keyring_path()


def _public_info(ring: Keyring) -> dict[str, Any]:
    """What may be shown of a keyring: ids, the active ones, public keys. Never key material."""
    return {
        "redaction": {"active": ring.redaction_active, "key_ids": sorted(ring.redaction_keys)},
        "signing": {
            "active": ring.signing_active,
            "public_keys": {
                kid: base64.b64encode(ring.public_key_bytes(kid)).decode("ascii")
                for kid in sorted(ring.signing_keys)
            },
        },
    }


def _show(ring: Keyring, path: Path) -> None:
    info = _public_info(ring)
    table = Table(title=f"keyring {path}", title_justify="left")
    table.add_column("kind")
    table.add_column("key id")
    table.add_column("active")
    table.add_column("public key (Ed25519, base64)", overflow="fold")
    for kid in info["redaction"]["key_ids"]:
        active = "yes" if kid == ring.redaction_active else ""
        table.add_row("redaction (HMAC-SHA256)", kid, active, "-")
    for kid, public in info["signing"]["public_keys"].items():
        active = "yes" if kid == ring.signing_active else ""
        table.add_row("signing (Ed25519)", kid, active, public)
    out_console.print(table)


@keys_app.command("init")
def keys_init(
    path: KeyringPath = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace an existing keyring (its tokens and signatures stop verifying).",
        ),
    ] = False,
) -> None:
    """Create a keyring (mode 0600): a redaction key and an Ed25519 signing key.

    A keyring that exists already is kept (exit 0): the command says where it is. --force
    replaces it; `refusalkit keys rotate` adds a key and keeps the old ones readable.
    """
    path = _keyring_file(path)
    if path.exists() and not force:
        Keyring.load(path)  # a keyring that does not load is an error, not "kept"
        err_console.print(
            f"keyring {path} exists; kept it (`refusalkit keys rotate` adds a key, "
            "--force replaces it)",
            markup=False,
        )
        return
    ring = Keyring.generate()
    ring.save(path)
    err_console.print(f"created keyring {path} (mode 0600)", markup=False)
    _show(ring, path)


@keys_app.command("rotate")
def keys_rotate(
    path: KeyringPath = None,
    signing: Annotated[
        bool, typer.Option("--signing", help="Rotate the signing key instead of the redaction key.")
    ] = False,
) -> None:
    """Add a new active key; old key ids stay, so old tokens and signatures stay readable."""
    path = _keyring_file(path)
    ring = Keyring.load(path)
    ring = ring.rotate_signing() if signing else ring.rotate_redaction()
    ring.save(path)
    kind, kid = (
        ("signing", ring.signing_active) if signing else ("redaction", ring.redaction_active)
    )
    err_console.print(f"{kind} key {kid} is now active in {path}", markup=False)
    _show(ring, path)


@keys_app.command("show")
def keys_show(
    path: KeyringPath = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show key ids, the active keys and public keys (never secret key material)."""
    path = _keyring_file(path)
    ring = Keyring.load(path)
    if as_json:
        typer.echo(json.dumps(_public_info(ring), indent=2))
        return
    _show(ring, path)


@keys_app.command("token")
def keys_token(
    value: Annotated[
        str,
        typer.Argument(
            help="The value, as a trail would hold it: a string as it is, any other JSON value "
            "as its canonical JSON (RFC 8785), e.g. 42 or true.",
            show_default=False,
        ),
    ],
    field_class: Annotated[
        str,
        typer.Option(
            "--class",
            help="The field class the trail names beside the token (the pack's `class:`).",
        ),
    ] = "unclassified",
    key_id: Annotated[
        str | None,
        typer.Option("--key-id", help="A redaction key id (default: the active one)."),
    ] = None,
    keyring: KeyringOption = None,
) -> None:
    """Print the keyed redaction token a why-trail holds for VALUE, to find its decisions.

    The token is an HMAC-SHA256 over the class and the value (docs/design/decision.md, Redaction),
    so only a holder of the keyring can compute it: search a journal export or `journal query`
    output for it to find every decision about one file, host or user.
    """
    ring, _ = resolve_keyring(keyring)
    typer.echo(ring.redactor(key_id).token(field_class, value))
