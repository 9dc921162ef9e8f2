"""The state one service process shares between its routes: pack, journal, keys, metrics."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refusalkit._internal.keys import KeyStore
from refusalkit.decide import DecisionEncoder
from refusalkit.errors import ServiceError
from refusalkit.journal import CheckpointScheduler, JournalAccess, signer_state_dir
from refusalkit.keyring import Keyring, resolve_keyring
from refusalkit.model import Decision
from refusalkit.server._auth import Authenticator
from refusalkit.server._config import ServiceConfig
from refusalkit.server._dashboard import DashboardData
from refusalkit.server._metrics import ServiceMetrics
from refusalkit.server._pack import PackHolder
from refusalkit.server._session import SessionSigner

if TYPE_CHECKING:
    from refusalkit.witness import WitnessOutcome

__all__ = ["SUPERVISOR_ENV", "Service", "VerifyStatus"]

SUPERVISOR_ENV = "REFUSALKIT_SUPERVISOR_PID"
decision_log = logging.getLogger("refusalkit.server.decisions")


@dataclass(slots=True)
class VerifyStatus:
    """The last full verification of the journal (run in the background for the dashboard)."""

    size: int = -1
    ok: bool | None = None
    message: str = "not verified yet"
    at: float = 0.0
    running: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class Service:
    """Everything a request needs; built by ``create_app`` from a ``ServiceConfig``."""

    def __init__(self, config: ServiceConfig, keyring: Keyring | None = None) -> None:
        self.config = config
        self.keyring_from_config = keyring is None
        self.keyring, keyring_path = (keyring, None) if keyring is not None else _load(config)
        state = config.signer_state or (signer_state_dir(keyring_path) if keyring_path else None)
        self.auth = Authenticator(_key_store(config))
        self.pack = PackHolder(config.policy, self.keyring, config.deadline_ms, config.engine)
        self.encoder = DecisionEncoder()
        self.journal = JournalAccess(
            config.journal,
            self.keyring,
            origin=config.origin,
            max_group=config.max_group_commit,
            signer_state=state,
        )
        self.checkpoints = CheckpointScheduler(
            self.journal, config.checkpoint_every, config.witnesses, _cosign
        )
        self.metrics = ServiceMetrics()
        self.sessions = SessionSigner(self.keyring)
        self.verify = VerifyStatus()
        self.started = time.time()
        self.verify_task: asyncio.Task[None] | None = None
        self.background: set[asyncio.Task[None]] = set()
        self.dashboard_cache: tuple[float, DashboardData] | None = None

    def log_decision(self, decision: Decision) -> None:
        """Log the redacted form of a decision (never the request) when asked to."""
        if not self.config.log_decisions:
            return
        decision_log.info(
            "decision %s action=%s reason_code=%s rule=%s agent=%s policy=%s request=%s",
            decision.decision_id,
            decision.action.value,
            decision.reason_code.value if decision.reason_code else "-",
            decision.matched_rule,
            decision.subject.agent,
            decision.policy.digest,
            decision.request_digest,
        )

    def spread_reload(self) -> None:
        """Ask the supervisor to reload every worker (multi-worker mode only)."""
        supervisor = os.environ.get(SUPERVISOR_ENV)
        if supervisor and supervisor.isdigit() and int(supervisor) == os.getppid():
            os.kill(int(supervisor), signal.SIGHUP)


def _cosign(
    note: str, urls: Sequence[str], proof: Callable[[int, int], list[bytes]]
) -> tuple[str, Sequence[WitnessOutcome]]:
    """Have ``note`` cosigned by the witnesses at ``urls`` (C2SP tlog-witness)."""
    from refusalkit.witness import collect_cosignatures  # noqa: PLC0415 (only with --witness)

    return collect_cosignatures(note, urls, proof)


def _load(config: ServiceConfig) -> tuple[Keyring, Path]:
    return resolve_keyring(config.keyring, create=False)


def _key_store(config: ServiceConfig) -> KeyStore | None:
    if config.keys_file is None:
        if not config.insecure_no_auth:
            raise ServiceError(
                "no keys file: the service would be open to anyone",
                hint="Pass --keys-file F (make keys with `refusalkit service keys add`), "
                "or --insecure-no-auth for local development only.",
            )
        return None
    store = KeyStore(config.keys_file, recheck_s=1.0)
    if not store.path.exists():
        raise ServiceError(
            f"the keys file {store.path} does not exist",
            hint=f"Create a key: `refusalkit service keys add NAME --keys-file {store.path}`.",
        )
    store.list_keys()  # fail now on a bad file, not on the first request
    return store
