"""The service signs checkpoints on its own schedule; reading never signs (docs/design/journal.md).

Every ``checkpoint_every`` seconds, and only when the tree grew past the latest signed checkpoint,
the writer lane signs one (through the signer state beside the keyring, so a store that no longer
extends what was signed is refused and logged, never signed). With witnesses configured, each new
checkpoint is then sent to them (C2SP tlog-witness) and their cosignatures are stored with it.
An ``admin``-scope call signs at once (``POST /v1/admin/journal/checkpoint``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from refusalkit.errors import RefusalkitError
from refusalkit.journal import Journal
from refusalkit.server._journal_io import JournalAccess

__all__ = ["CheckpointScheduler", "sign_if_grown"]

log = logging.getLogger("refusalkit.server.checkpoints")


def sign_if_grown(journal: Journal) -> str | None:
    """Sign a checkpoint when the log grew past the latest signed one (or none exists yet)."""
    latest = journal.store.latest_checkpoint()
    if latest is not None and latest[0] >= journal.size():
        return None
    return journal.checkpoint()


class CheckpointScheduler:
    """The background task that signs (and has witnessed) checkpoints on a schedule."""

    def __init__(
        self, access: JournalAccess, every: float, witnesses: tuple[tuple[str, str], ...]
    ) -> None:
        self._access, self._every, self._witnesses = access, every, witnesses
        self._task: asyncio.Task[None] | None = None
        self.last_error: str | None = None

    def start(self) -> None:
        """Start signing: now, then every ``every`` seconds."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the schedule (a signing in progress finishes on its thread)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def sign_now(self, *, force: bool) -> str:
        """Sign (``force``: even when the tree did not grow), then gather cosignatures."""
        note = await self._access.write(lambda j: j.checkpoint() if force else sign_if_grown(j))
        if note is not None and self._witnesses:
            await self._cosign(note)
        latest: str | None = await self._access.write(lambda j: j.latest_checkpoint())
        return latest or ""

    async def _cosign(self, note: str) -> None:
        """Ask each witness to cosign ``note`` off the writer lane (HTTP may be slow), then store
        the cosignatures with the checkpoint. Consistency proofs come from the reader lane."""
        from refusalkit.witness import (  # noqa: PLC0415 (only with --witness)
            CosignerKey,
            collect_cosignatures,
        )

        loop = asyncio.get_running_loop()

        def proof(old: int, new: int) -> list[bytes]:
            found = asyncio.run_coroutine_threadsafe(
                self._access.read(lambda j: j.consistency_proof(old, new)), loop
            ).result()
            return [bytes.fromhex(h) for h in found["hashes"]]

        targets = [(url, CosignerKey.parse(key)) for url, key in self._witnesses]
        merged, outcomes = await asyncio.to_thread(collect_cosignatures, note, targets, proof)
        for outcome in outcomes:
            for line in outcome.dropped:
                log.warning("witness %s: dropped a line by %s", outcome.url, line)
            if outcome.error:
                log.warning("witness %s did not cosign: %s", outcome.url, outcome.error)
        await self._access.write(lambda j: j.add_cosignatures(merged))

    async def _run(self) -> None:
        while True:
            try:
                await self.sign_now(force=False)
                self.last_error = None
            except RefusalkitError as exc:
                self.last_error = exc.message
                log.error("checkpoint not signed: %s (%s)", exc.message, exc.hint)  # noqa: TRY400
            except Exception:  # the schedule goes on; the error is logged
                self.last_error = "unexpected error"
                log.exception("checkpoint not signed")
            await asyncio.sleep(self._every)
