"""The service's configuration: one frozen record, passed to ``create_app`` (and to workers).

Worker processes started by uvicorn (``--workers N``) rebuild it from the JSON that ``serve`` puts
in the ``REFUSALKIT_SERVICE_CONFIG`` environment variable, so every worker runs the same settings.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_ENV", "ServiceConfig"]

CONFIG_ENV = "REFUSALKIT_SERVICE_CONFIG"


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Settings of one service process.

    ``keys_file`` None is only accepted with ``insecure_no_auth`` (local development: every caller
    gets every scope). ``keyring`` None means ``$REFUSALKIT_KEYRING`` or the default keyring.
    ``secure_cookies``: mark the dashboard's session cookie ``Secure`` whatever the request's
    scheme, for a service behind a TLS-terminating proxy that forwards plain HTTP (without it,
    the cookie is ``Secure`` only on requests that arrive over https).
    The service signs a checkpoint every ``checkpoint_every`` seconds when the log grew, and has
    each one cosigned by the ``witnesses`` (URL prefix and cosigner key ``NAME+ID+BASE64`` each,
    C2SP tlog-witness; only lines by that key that verify are kept). ``signer_state`` is
    the signer state directory (default: beside the keyring file; docs/design/journal.md).
    """

    policy: Path | None
    journal: str
    keys_file: Path | None = None
    keyring: Path | None = None
    insecure_no_auth: bool = False
    max_body_bytes: int = 1_048_576
    max_batch: int = 1000
    deadline_ms: float = 50.0
    origin: str | None = None
    log_decisions: bool = False
    max_group_commit: int = 10_000
    max_entries_page: int = 1000
    engine: dict[str, Any] | None = None  # an EngineSpec.to_dict(): decide with it, not a pack
    secure_cookies: bool = False
    checkpoint_every: float = 10.0
    witnesses: tuple[tuple[str, str], ...] = ()  # (URL prefix, the witness's cosigner key)
    signer_state: Path | None = None

    def to_json(self) -> str:
        """The JSON form (paths as strings) for the environment of worker processes."""
        data = asdict(self)
        for key in ("policy", "keys_file", "keyring", "signer_state"):
            data[key] = str(data[key]) if data[key] is not None else None
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ServiceConfig:
        """Rebuild from ``to_json``; unknown keys are ignored."""
        data: dict[str, Any] = json.loads(text)
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("policy", "keys_file", "keyring", "signer_state"):
            if values.get(key) is not None:
                values[key] = Path(values[key])
        values["witnesses"] = tuple(tuple(pair) for pair in values.get("witnesses", ()))
        return cls(**values)
