"""Journal test fixtures: a store location per backend, raw SQL access for tampering."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from support.stores import store_url

__all__ = ["store_url"]  # the shared fixture, used by every journal test

SqlRunner = Callable[..., list[Any]]


def make_decision(i: int, *, action: str = "deny", agent: str = "coder") -> dict[str, object]:
    """A decision-shaped record (docs/design/decision.md)."""
    refuses = action in ("deny", "block")
    return {
        "schema": "refusalkit.decision/v1",
        "decision_id": f"0193f1c2-0000-7000-8000-{i:012d}",
        "action": action,
        "reason_code": "policy-denied" if refuses else None,
        "reason_codes_version": 1,
        "matched_rule": "sensitive_path" if refuses else "approved_workspace",
        "message": "Writes to credential files are not allowed." if refuses else None,
        "retryable": False,
        "why_trail": [
            {"rule": "sensitive_path", "effect": "deny", "matched": refuses, "decisive": refuses}
        ],
        "policy": {"id": "agent-tools", "version": "v3", "digest": "sha256:" + "ab" * 32},
        "engine": {"name": "refusalkit", "version": "0.1.0"},
        "subject": {"agent": agent, "session": f"s-{i % 3}"},
        "request_digest": "hmac-sha256:k1:" + f"{i:064x}",
        "decided_at": f"2026-05-02T14:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
    }


@pytest.fixture
def decision() -> Callable[..., dict[str, object]]:
    """``decision(i, action=..., agent=...)``: a decision-shaped record."""
    return make_decision


@pytest.fixture
def raw_sql(store_url: str) -> Iterator[SqlRunner]:
    """Run SQL directly against the store (``?`` placeholders), as an attacker with file access."""
    if store_url.startswith("postgresql://"):
        import psycopg  # noqa: PLC0415 (only for the PostgreSQL runs)

        conn = psycopg.connect(store_url, autocommit=True)

        def run_pg(sql: str, *params: Any) -> list[Any]:
            cur = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

        yield run_pg
        conn.close()
    else:
        db = sqlite3.connect(store_url, isolation_level=None)

        def run_sqlite(sql: str, *params: Any) -> list[Any]:
            return db.execute(sql, params).fetchall()

        yield run_sqlite
        db.close()
