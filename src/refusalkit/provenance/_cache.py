"""The resumable response cache: one SQLite file, one row per answered prompt.

Responses are keyed by run, model, prompt hash and sampling parameters. A run is identified by
``run_key`` (model, endpoint, set hash, sampling): a new run with the same key resumes the latest
unfinished one, so an interrupted run continues without re-asking answered prompts; a finished
run is never reused, so a later run asks the model afresh (drift needs fresh answers).

Each response is committed as it arrives (WAL journal): a killed process loses none; an
operating-system crash may lose the last few, which are simply asked again.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from refusalkit.errors import RunnerError
from refusalkit.model import canonical_json, format_timestamp, now_utc, uuid7

__all__ = ["ResponseCache", "RunSession", "default_cache_path", "digest_of"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, run_key TEXT NOT NULL, started_at TEXT NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_key ON runs (run_key, started_at);
CREATE TABLE IF NOT EXISTS responses (
    run_id TEXT NOT NULL, key TEXT NOT NULL, response TEXT NOT NULL, PRIMARY KEY (run_id, key)
);
"""


def digest_of(value: Any) -> str:
    """SHA-256 hex of the RFC 8785 form of a JSON value."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def default_cache_path() -> Path:
    """``<user cache dir>/refusalkit/calibration-cache.sqlite3``."""
    return Path(platformdirs.user_cache_dir("refusalkit")) / "calibration-cache.sqlite3"


@dataclass(frozen=True, slots=True)
class RunSession:
    """An open run in the cache: its id, first start time, and the responses it already has."""

    run_id: str
    started_at: str
    answered: Mapping[str, str]
    resumed: bool


class ResponseCache:
    """A SQLite file of responses per run (see the module docstring)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise RunnerError(
                f"cannot open the response cache {self.path}: {exc}",
                hint="Pass --cache PATH to a writable file, or remove a corrupt one.",
            ) from None

    def open_run(self, run_key: str, *, fresh: bool = False) -> RunSession:
        """Resume the latest unfinished run with ``run_key``, or start a new one."""
        row = None
        if not fresh:
            row = self._db.execute(
                "SELECT run_id, started_at FROM runs WHERE run_key = ? AND finished = 0"
                " ORDER BY started_at DESC LIMIT 1",
                (run_key,),
            ).fetchone()
        if row is None:
            run_id, started_at = uuid7(), format_timestamp(now_utc())
            self._db.execute(
                "INSERT INTO runs (run_id, run_key, started_at) VALUES (?, ?, ?)",
                (run_id, run_key, started_at),
            )
            return RunSession(run_id, started_at, {}, resumed=False)
        answered = dict(
            self._db.execute("SELECT key, response FROM responses WHERE run_id = ?", (row[0],))
        )
        return RunSession(str(row[0]), str(row[1]), answered, resumed=True)

    def put(self, run_id: str, key: str, response: str) -> None:
        """Store one response durably (committed before this returns)."""
        self._db.execute(
            "INSERT OR REPLACE INTO responses (run_id, key, response) VALUES (?, ?, ?)",
            (run_id, key, response),
        )

    def finish(self, run_id: str) -> None:
        """Mark a run finished: it will not be resumed."""
        self._db.execute("UPDATE runs SET finished = 1 WHERE run_id = ?", (run_id,))

    def close(self) -> None:
        """Close the file."""
        self._db.close()
