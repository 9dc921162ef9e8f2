"""``refusalkit witness``: init, add-log, serve: a C2SP tlog-witness for journals.

Contracts: docs/design/witness.md.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from refusalkit.cli._app import app
from refusalkit.cli._common import err_console, out_console
from refusalkit.errors import UsageError

if TYPE_CHECKING:
    from refusalkit.witness import CosignerKey

__all__ = ["app", "witness_app", "witness_targets"]

witness_app = typer.Typer(
    name="witness",
    help="A witness: cosigns a log's checkpoints only when they extend the last one it cosigned.",
    no_args_is_help=True,
)
app.add_typer(witness_app, name="witness")


def witness_targets(urls: list[str], keys: list[str]) -> list[tuple[str, CosignerKey]]:
    """``--witness URL`` paired in order with ``--witness-key NAME+ID+BASE64``: each witness is
    asked under the key the operator configured for it."""
    from refusalkit.witness import CosignerKey  # noqa: PLC0415

    if len(urls) != len(keys):
        raise UsageError(
            f"{len(urls)} --witness URL(s) but {len(keys)} --witness-key key(s)",
            hint="Give each witness its key, in the same order: --witness URL --witness-key "
            "KEY (as `refusalkit witness init` printed it). Lines by any other key are dropped.",
        )
    return [(url, CosignerKey.parse(key)) for url, key in zip(urls, keys, strict=True)]


DirArg = Annotated[Path, typer.Argument(help="The witness directory.", show_default=False)]


@witness_app.command("init")
def init_cmd(
    directory: DirArg,
    name: Annotated[
        str | None, typer.Option("--name", help="Cosigner name, e.g. witness.example.org/w1.")
    ] = None,
) -> None:
    """Create a witness key and empty state; prints the witness's verifier key last."""
    from refusalkit.witness import WitnessDir  # noqa: PLC0415

    witness = WitnessDir.init(directory, name)
    out_console.print(f"created witness in {directory}; its verifier key (--witness-key):")
    typer.echo(witness.cosigner_key().vkey)


@witness_app.command("add-log")
def add_log_cmd(
    directory: DirArg,
    origin: Annotated[str, typer.Option("--origin", help="The log's origin.", show_default=False)],
    public_key: Annotated[
        str,
        typer.Option(
            "--public-key",
            help="The log's verifier key (`refusalkit journal public-key STORE`).",
            show_default=False,
        ),
    ],
) -> None:
    """Accept checkpoints of ORIGIN signed by the log key."""
    from refusalkit.witness import WitnessDir  # noqa: PLC0415

    verifier = WitnessDir(directory).add_log(origin, public_key)
    out_console.print(f"witness accepts {origin} signed by {verifier.name}+{verifier.key_id:08x}")


@witness_app.command("restore-state")
def restore_state_cmd(
    directory: DirArg,
    checkpoint: Annotated[
        Path,
        typer.Option(
            "--checkpoint",
            help="The last checkpoint this witness cosigned for the log (a signed note file).",
            show_default=False,
        ),
    ],
) -> None:
    """Recover a log's damaged state: take its last cosigned checkpoint from the operator."""
    from refusalkit.journal import read_checkpoint_file  # noqa: PLC0415
    from refusalkit.witness import WitnessDir  # noqa: PLC0415

    restored = WitnessDir(directory).restore(read_checkpoint_file(checkpoint))
    out_console.print(
        f"witness state of {restored.origin} is the checkpoint of size {restored.size} again"
    )


@witness_app.command("serve")
def serve_cmd(
    directory: DirArg,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free one).")] = 8282,
    read_timeout: Annotated[
        float,
        typer.Option("--read-timeout", min=0.1, help="Close a connection idle this long (s)."),
    ] = 10.0,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections", min=1, help="Connections served at once (one thread each)."
        ),
    ] = 64,
) -> None:
    """Serve POST /add-checkpoint (C2SP tlog-witness) until interrupted.

    One server per directory: a second one refuses to start (exit 2).
    """
    from refusalkit.witness import Witness, WitnessDir, make_server  # noqa: PLC0415

    server = make_server(
        Witness(WitnessDir(directory)),
        host,
        port,
        read_timeout=read_timeout,
        max_connections=max_connections,
    )
    bound = server.server_address[1]
    err_console.print(f"witness listening on http://{host}:{bound}")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.server_close()
