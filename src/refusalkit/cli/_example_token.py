"""``refusalkit keys example-token``: an attestation token signed with the bundled EXAMPLE key.

The bundled pack (``examples/agent-tools.yaml``) trusts the public half of
``examples/example-attestation-key.json``, a key pair published with refusalkit so that the tour
can reach its rules. Anyone can sign with it: a real pack must never list it.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Annotated

import typer

from refusalkit.cli._common import err_console
from refusalkit.cli._keys import keys_app
from refusalkit.decide import mint_token
from refusalkit.examples import example_path

__all__ = ["example_token"]

EXAMPLE_KEY = "example-attestation-key.json"


@keys_app.command("example-token")
def example_token(
    agent: Annotated[str, typer.Option("--agent", help="The agent the token speaks for (`sub`).")],
    ttl: Annotated[
        int, typer.Option("--ttl", min=1, max=86_400, help="Seconds until the token expires.")
    ] = 3600,
) -> None:
    """Print an EXAMPLE-ONLY attestation token for AGENT, trusted by the bundled example pack.

    The key is published with refusalkit: never trust it in a real pack.
    """
    key = json.loads(example_path(EXAMPLE_KEY).read_text(encoding="utf-8"))
    seed = base64.b64decode(key["private_seed_b64"], validate=True)
    token = mint_token(seed, key["kid"], agent, int(time.time()) + ttl)
    err_console.print(
        f"EXAMPLE ONLY: signed with the published key {key['kid']!r}; "
        "only the bundled example pack trusts it.",
        markup=False,
    )
    typer.echo(token)
