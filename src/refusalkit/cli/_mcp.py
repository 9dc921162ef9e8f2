"""``refusalkit mcp wrap`` and ``refusalkit mcp proxy``: refusalkit between MCP clients and servers.

The MCP SDK is imported only when one of these runs (the ``refusalkit[mcp]`` extra), so the rest
of the command line works without it. See docs/mcp.md.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import anyio
import typer

from refusalkit._internal.keys import KeyStore
from refusalkit._internal.serving import tune_gc
from refusalkit.cli._app import app
from refusalkit.cli._common import KeyringOption, err_console, load_keyring, signer_state
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import RefusalkitError, UsageError
from refusalkit.model import uuid7

__all__ = ["mcp_app"]

mcp_app = typer.Typer(
    help="Enforce a policy pack on MCP tool calls: wrap a stdio server, or proxy an HTTP one.",
    no_args_is_help=True,
)
app.add_typer(mcp_app, name="mcp")

Policy = Annotated[Path, typer.Option("--policy", "-p", help="Policy pack (YAML or JSON).")]
JournalStore = Annotated[
    str,
    typer.Option(
        "--journal", help="Journal every decision here: a SQLite file or a postgresql:// URL."
    ),
]
ServerName = Annotated[
    str,
    typer.Option(
        "--server-name",
        help="Prefix of the request's tool: a call of read_file is decided as NAME.read_file.",
    ),
]
Shadow = Annotated[
    bool,
    typer.Option(
        "--shadow",
        help="Decide and journal everything, enforce nothing: forward every call, and report "
        "on stderr what would have been refused.",
    ),
]
PinFileOption = Annotated[
    Path | None,
    typer.Option(
        "--pin",
        help="Pin tool definitions in FILE: a tool that differs from its pin, or has none, is not "
        "listed and its calls are refused. A FILE that does not exist yet gets the first "
        "tools/list answer (trust on first use). Review changes with `refusalkit mcp pin`.",
        metavar="FILE",
    ),
]
Results = Annotated[
    str,
    typer.Option(
        "--results",
        help="Tool results and resource contents holding credentials or personal data: redact "
        "each finding (typed placeholder with a keyed token), block the result, or off.",
        metavar="redact|block|off",
    ),
]
TimeoutMs = Annotated[
    float,
    typer.Option(
        "--timeout-ms",
        min=1.0,
        help="Longest a call may wait for its decision to be journaled; then it is refused "
        "unavailable.",
    ),
]


def _sdk() -> Any:
    """The proxy package, or a usage error naming the extra to install."""
    try:
        import refusalkit.mcp_proxy as proxy  # noqa: PLC0415 (only with the mcp extra)
    except ImportError as exc:
        raise UsageError(
            f"the MCP proxy needs the MCP SDK ({exc.name} is missing)",
            hint="Install it with `pip install 'refusalkit[mcp]'`.",
        ) from exc
    return proxy


def _run(main: Callable[[], Awaitable[None]]) -> None:
    """Run ``main``; a refusalkit error inside a task group surfaces as itself (so the CLI
    prints its message and hint, not a traceback).

    SIGTERM stops it as SIGINT does: the event loop cancels ``main``, so every ``finally`` runs
    and the gate signs its final checkpoint (docs/mcp.md); then the command exits 0.
    """
    previous = signal.signal(signal.SIGTERM, _as_interrupt)
    tune_gc()  # this process serves only the proxy, whose pack and keyring are loaded now
    try:
        anyio.run(main, backend_options=_loop_options())
    except KeyboardInterrupt:
        err_console.print("refusalkit mcp: stopped by a signal", markup=False)
        raise typer.Exit(0) from None
    except BaseExceptionGroup as group:
        found = _first_error(group)
        if found is None:
            raise
        raise found from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _loop_options() -> dict[str, Any]:
    """uvloop when it is installed (the ``server`` extra brings it; ``mcp`` does not need it),
    as the service does (``server/_run.py``): its loop turns and pipe transports cost a
    fraction of asyncio's, and ``mcp wrap`` turns the loop about seven times a call."""
    if sys.platform == "win32" or importlib.util.find_spec("uvloop") is None:
        return {}
    return {"use_uvloop": True}


def _as_interrupt(_signum: int, frame: FrameType | None) -> None:
    """SIGTERM, handled by whatever handles SIGINT now: asyncio's runner, which cancels the
    main task (a second signal interrupts at once), else Python's KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def _first_error(group: BaseExceptionGroup[BaseException]) -> RefusalkitError | None:
    for exc in group.exceptions:
        if isinstance(exc, RefusalkitError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_error(exc)
            if found is not None:
                return found
    return None


def _env_token(name: str | None) -> str | None:
    if name is None:
        return None
    token = os.environ.get(name)
    if not token:
        raise UsageError(
            f"--upstream-token-env names {name}, which is not set or empty",
            hint=f"Export {name} with the upstream's bearer token.",
        )
    return token


def _gate_options(proxy: Any, pin: Path | None, results: str) -> dict[str, Any]:
    """The gate's pin set and result mode, checked before anything starts."""
    try:
        mode = proxy.ResultMode(results)
    except ValueError:
        raise UsageError(
            f"--results must be redact, block or off, not {results!r}",
            hint="redact (the default) replaces each finding; block withholds the result.",
        ) from None
    pins = proxy.PinSet(pin) if pin is not None else None
    return {"pins": pins, "results": mode}


def _warn_scope(point: DecisionPoint, agent: str | None, server_name: str) -> None:
    """Say at start when the pack's capabilities cannot grant this agent any tool."""
    caps = point.pack.compiled.capabilities
    if caps is None or (agent is not None and caps.get(agent)):
        return
    who = (
        "no --agent was given"
        if agent is None
        else f"the pack's capabilities do not list {agent!r}"
    )
    err_console.print(
        f"refusalkit: warning: {who}, so no tool of the server {server_name!r} is granted: every "
        "call will be refused out-of-scope. Check --agent and --server-name.",
        markup=False,
    )


def _prefer_latency() -> None:
    """Hand the GIL between the event loop and the journal's writer thread every 0.1 ms, not
    every 5 ms: a proxy's loop otherwise waits out the interval on each append it hands over."""
    sys.setswitchinterval(0.0001)


@mcp_app.command(
    "wrap", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
)
def wrap_command(
    *,
    policy: Policy,
    journal: JournalStore,
    command: Annotated[
        list[str], typer.Argument(metavar="-- CMD ARGS...", help="The MCP server's command line.")
    ],
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent this client is (caller.agent).")
    ] = None,
    server_name: ServerName = "mcp",
    shadow: Shadow = False,
    keyring: KeyringOption = None,
    timeout_ms: TimeoutMs = 5000.0,
    pin: PinFileOption = None,
    results: Results = "redact",
) -> None:
    """Run an MCP server over stdio behind the policy: paste this in place of its command."""
    proxy = _sdk()
    _prefer_latency()
    ring = load_keyring(keyring)
    point = DecisionPoint(load_pack(policy), ring)
    options = _gate_options(proxy, pin, results)
    _warn_scope(point, agent, server_name)
    caller = proxy.Caller(agent=agent, session=uuid7())
    mode = "shadow (nothing enforced)" if shadow else "enforcing"
    err_console.print(
        f"refusalkit mcp wrap: session {caller.session}, {mode}, journal {journal}", markup=False
    )

    async def run() -> None:
        async with proxy.open_gate(
            point, journal, ring, server_name=server_name, shadow=shadow,
            timeout_s=timeout_ms / 1000.0, signer_state=signer_state(keyring), **options,
        ) as gate:  # fmt: skip
            try:
                await proxy.serve_stdio(gate, caller, command)
            finally:
                if shadow:
                    err_console.print(
                        f"refusalkit shadow: session {caller.session}: {gate.would_refuse} "
                        "call(s) would have been refused",
                        markup=False,
                    )

    _run(run)


@mcp_app.command("proxy")
def proxy_command(
    *,
    upstream: Annotated[
        str, typer.Option("--upstream", help="The MCP server's Streamable HTTP endpoint URL.")
    ],
    policy: Policy,
    journal: JournalStore,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8282,
    keys_file: Annotated[
        Path | None,
        typer.Option(
            "--keys-file",
            envvar="REFUSALKIT_KEYS_FILE",
            help="API keys file, as for `refusalkit serve`; keys need the decide scope.",
        ),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option("--insecure-no-auth", help="Accept every client. Local development only."),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="caller.agent of every session (default: the key's name)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A host name clients use to reach the proxy, besides loopback (repeatable); "
            "requests naming another are refused (DNS rebinding).",
        ),
    ] = None,
    upstream_token_env: Annotated[
        str | None,
        typer.Option(
            "--upstream-token-env",
            metavar="VAR",
            help="Send the upstream `Authorization: Bearer $VAR` (the variable's name, so the "
            "token stays out of the command line).",
        ),
    ] = None,
    server_name: ServerName = "mcp",
    shadow: Shadow = False,
    keyring: KeyringOption = None,
    timeout_ms: TimeoutMs = 5000.0,
    pin: PinFileOption = None,
    results: Results = "redact",
) -> None:
    """Serve a remote MCP server's Streamable HTTP endpoint at /mcp, behind the policy."""
    if (keys_file is None) == (not insecure_no_auth):
        raise UsageError(
            "give exactly one of --keys-file and --insecure-no-auth",
            hint="Make keys with `refusalkit service keys add NAME --scopes decide`.",
        )
    token = _env_token(upstream_token_env)
    proxy = _sdk()
    _prefer_latency()
    ring = load_keyring(keyring)
    point = DecisionPoint(load_pack(policy), ring)
    options = _gate_options(proxy, pin, results)
    if agent is not None:
        _warn_scope(point, agent, server_name)
    keys = KeyStore(keys_file, recheck_s=1.0) if keys_file is not None else None

    def ready(url: str) -> None:
        err_console.print(f"refusalkit mcp proxy: {url} -> {upstream}", markup=False)

    async def run() -> None:
        async with proxy.open_gate(
            point, journal, ring, server_name=server_name, shadow=shadow,
            timeout_s=timeout_ms / 1000.0, signer_state=signer_state(keyring), **options,
        ) as gate:  # fmt: skip
            app = proxy.ProxyApp(
                gate, upstream, keys=keys, agent=agent, allowed_hosts=allowed_host or (),
                upstream_token=token,
            )  # fmt: skip
            await proxy.serve_http(app, host=host, port=port, ready=ready)

    _run(run)
