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

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import RefusalkitError
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
    """Holds the current ``DecisionPoint``; ``reload`` swaps it atomically."""

    def __init__(self, path: Path, keyring: Keyring, deadline_ms: float) -> None:
        self.path, self._keyring, self._deadline_ms = path, keyring, deadline_ms
        self.point: DecisionPoint = self._build()
        self._lock = asyncio.Lock()

    def _build(self) -> DecisionPoint:
        return DecisionPoint(load_pack(self.path), self._keyring, deadline_ms=self._deadline_ms)

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
