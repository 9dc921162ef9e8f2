"""Signing checkpoints on a schedule; reading never signs (docs/design/journal.md).

Every ``every`` seconds, and only when the tree grew past the latest signed checkpoint, the
writer lane signs one (through the signer state beside the keyring, so a store that no longer
extends what was signed is refused and logged, never signed). With witnesses configured, each new
checkpoint is then sent to them (C2SP tlog-witness) through the ``cosign`` callable the owner
passes in (``refusalkit.witness.collect_cosignatures``; the journal does not import the witness
package, which builds on it), and their cosignatures are stored with it. The service signs at
once on an ``admin``-scope call (``POST /v1/admin/journal/checkpoint``) through ``sign_now``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from refusalkit.errors import RefusalkitError
from refusalkit.journal._access import JournalAccess
from refusalkit.journal._journal import Journal

__all__ = ["CheckpointScheduler", "Cosigner", "sign_if_grown"]

log = logging.getLogger("refusalkit.server.checkpoints")


class CosignOutcome(Protocol):
    """What a witness answered (``refusalkit.witness.WitnessOutcome``)."""

    @property
    def url(self) -> str: ...

    @property
    def error(self) -> str | None: ...


ProofSource = Callable[[int, int], list[bytes]]
Cosigner = Callable[[str, Sequence[str], ProofSource], tuple[str, Sequence[CosignOutcome]]]
"""``(note, witness URLs, proof source) -> (note with cosignatures, outcomes)``."""


def sign_if_grown(journal: Journal) -> str | None:
    """Sign a checkpoint when the log grew past the latest signed one (or none exists yet)."""
    latest = journal.store.latest_checkpoint()
    if latest is not None and latest[0] >= journal.size():
        return None
    return journal.checkpoint()


class CheckpointScheduler:
    """The background task that signs (and has witnessed) checkpoints on a schedule."""

    def __init__(
        self,
        access: JournalAccess,
        every: float,
        witnesses: tuple[str, ...],
        cosign: Cosigner | None = None,
    ) -> None:
        self._access, self._every, self._witnesses = access, every, witnesses
        self._cosigner = cosign
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start signing: now, then every ``every`` seconds."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the schedule (a signing in progress finishes on its thread), then sign a last
        checkpoint over what grew since the latest one: a service stopped by SIGTERM or SIGINT
        (uvicorn's graceful shutdown runs this) leaves no decision outside a checkpoint."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        try:
            note = await self._access.write(sign_if_grown)
        except RefusalkitError as exc:
            log.error("final checkpoint not signed: %s (%s)", exc.message, exc.hint)  # noqa: TRY400
        except Exception:  # shutting down: log it, and let the journal close
            log.exception("final checkpoint not signed")
        else:
            if note is not None:
                size = [*note.splitlines(), "", "?"][1]
                log.info("final checkpoint signed at tree size %s", size)

    async def sign_now(self, *, force: bool) -> str:
        """Sign (``force``: even when the tree did not grow), then gather cosignatures."""
        note = await self._access.write(lambda j: j.checkpoint() if force else sign_if_grown(j))
        if note is not None and self._witnesses and self._cosigner is not None:
            await self._cosign(self._cosigner, note)
        latest: str | None = await self._access.write(lambda j: j.latest_checkpoint())
        return latest or ""

    async def _cosign(self, cosigner: Cosigner, note: str) -> None:
        """Ask each witness to cosign ``note`` off the writer lane (HTTP may be slow), then store
        the cosignatures with the checkpoint. Consistency proofs come from the reader lane."""
        loop = asyncio.get_running_loop()

        def proof(old: int, new: int) -> list[bytes]:
            found = asyncio.run_coroutine_threadsafe(
                self._access.read(lambda j: j.consistency_proof(old, new)), loop
            ).result()
            return [bytes.fromhex(h) for h in found["hashes"]]

        merged, outcomes = await asyncio.to_thread(cosigner, note, self._witnesses, proof)
        for outcome in outcomes:
            if outcome.error:
                log.warning("witness %s did not cosign: %s", outcome.url, outcome.error)
        await self._access.write(lambda j: j.add_cosignatures(merged))

    async def _run(self) -> None:
        while True:
            try:
                await self.sign_now(force=False)
            except RefusalkitError as exc:
                log.error("checkpoint not signed: %s (%s)", exc.message, exc.hint)  # noqa: TRY400
            except Exception:  # the schedule goes on; the error is logged
                log.exception("checkpoint not signed")
            await asyncio.sleep(self._every)
