"""Verify a journal in a child process, for the dashboard, without holding up the service.

A full ``Journal.verify`` reads every entry; run in the service's own process it would hold the
journal connection (and, on SQLite, that process's only connection) for as long as it takes. The
child opens its own connection and prints one JSON line: ``{"ok", "size"}`` or
``{"ok", "message"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

__all__ = ["main", "verify_in_child"]


async def verify_in_child(
    store: str, keyring: Path | None, timeout: float = 600.0
) -> tuple[bool, str]:
    """``(ok, message)`` of verifying ``store`` in a child process."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "refusalkit.server._verify_job",
        store,
        str(keyring or ""),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return False, "verification timed out"
    except asyncio.CancelledError:  # the service is stopping: reap the child on this loop
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    try:
        result = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, f"the verifier exited with status {proc.returncode}"
    if result.get("ok"):
        return True, f"{result['size']} entries verified"
    return False, str(result.get("message", "verification failed"))


def main() -> None:
    """Child side: ``python -m refusalkit.server._verify_job STORE [KEYRING]``."""
    from refusalkit.errors import RefusalkitError  # noqa: PLC0415
    from refusalkit.journal import open_journal  # noqa: PLC0415
    from refusalkit.keyring import resolve_keyring  # noqa: PLC0415

    result: dict[str, object]
    store, keyring = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "") or None
    try:
        ring, _ = resolve_keyring(keyring)
        with open_journal(store, ring, create=False) as journal:
            journal.verify()
            result = {"ok": True, "size": journal.size()}
    except RefusalkitError as exc:
        result = {"ok": False, "message": exc.message}
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
