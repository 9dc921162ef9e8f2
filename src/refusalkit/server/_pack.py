"""The pack in force, swapped whole on reload (docs/design/policy.md; hot reload).

A reload loads and checks the new pack off the event loop, builds a new ``DecisionPoint`` and only
then replaces the reference: a request reads the reference once, so it is decided entirely by the
old pack or entirely by the new one, never by a half-loaded one. A pack that does not load is
rejected with its errors and the old one keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.engines import Adapter, EngineKind, EngineSpec, open_engine
from refusalkit.errors import RefusalkitError, ServiceError
from refusalkit.keyring import Keyring

__all__ = ["PackHolder", "ReloadResult"]

log = logging.getLogger("refusalkit.server")


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """What a reload did: the digest in force afterwards, and the error when it was rejected."""

    loaded: bool
    digest: str
    previous_digest: str
    error: str | None = None
    hint: str | None = None


class PackHolder:
    """Holds the current ``DecisionPoint``, or the engine adapter (docs/engines.md) when the
    service decides with an external engine; ``reload`` swaps it atomically (an adapter reloads
    its policy files too)."""

    def __init__(
        self,
        path: Path | None,
        keyring: Keyring,
        deadline_ms: float,
        engine: dict[str, Any] | None = None,
    ) -> None:
        self._spec = EngineSpec.from_dict(engine) if engine is not None else None
        if (path is None) == (self._spec is None):
            raise ServiceError("give either a policy pack or an engine, not both or neither")
        source = self._spec.source if self._spec is not None else str(path)
        self.path, self._keyring, self._deadline_ms = Path(source), keyring, deadline_ms
        self.point: DecisionPoint | Adapter = self._build()
        self._lock = asyncio.Lock()

    def _build(self) -> DecisionPoint | Adapter:
        if self._spec is not None:
            return open_engine(self._spec, self._keyring, deadline_ms=self._deadline_ms)
        return DecisionPoint(load_pack(self.path), self._keyring, deadline_ms=self._deadline_ms)

    def source_missing(self) -> bool:
        """Whether the pack (or engine policy) is gone, so a reload would fail (OPA: never)."""
        if self._spec is not None and self._spec.kind is EngineKind.OPA:
            return False
        return not self.path.exists()

    @property
    def digest(self) -> str:
        """The digest of the pack in force."""
        return self.point.pack.digest

    async def reload(self) -> ReloadResult:
        """Load the pack file again; swap only when it loads cleanly."""
        async with self._lock:
            previous = self.digest
            try:
                point = await asyncio.get_running_loop().run_in_executor(None, self._build)
            except RefusalkitError as exc:
                log.warning("pack reload rejected, still serving %s: %s", previous, exc.message)
                return ReloadResult(
                    loaded=False,
                    digest=previous,
                    previous_digest=previous,
                    error=exc.message,
                    hint=exc.hint,
                )
            except (OSError, ValueError) as exc:
                log.warning("pack reload rejected, still serving %s: %s", previous, exc)
                return ReloadResult(
                    loaded=False,
                    digest=previous,
                    previous_digest=previous,
                    error=str(exc),
                    hint="Fix the pack file.",
                )
            self.point = point
            log.info("pack reloaded: %s -> %s", previous, point.pack.digest)
            return ReloadResult(loaded=True, digest=point.pack.digest, previous_digest=previous)
