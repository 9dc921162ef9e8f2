"""The ``store_url`` fixture: one journal store location per backend (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["store_url"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, not yet created journal store: an SQLite path or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    url: str = request.getfixturevalue("postgres_url")
    return url
