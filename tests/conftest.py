"""Fixtures shared by every part's tests: keyrings, temporary PostgreSQL databases, vectors.

PostgreSQL tests use the real server at 127.0.0.1:5432 (trust auth). Where none answers they are
skipped with a visible reason, except in CI (``CI`` set), where a missing server is a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from refusalkit.keyring import Keyring

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "vectors"
PG_ADMIN_URL = os.environ.get("REFUSALKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def keyring() -> Keyring:
    """A fresh in-memory keyring."""
    return Keyring.generate()


@pytest.fixture
def keyring_path(tmp_path: Path, keyring: Keyring) -> Path:
    """The ``keyring`` fixture saved to a 0600 file."""
    return keyring.save(tmp_path / "keyring.json")


@pytest.fixture(autouse=True)
def _isolated_default_keyring(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep tests away from the user's real data directory and keyring."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.delenv("REFUSALKIT_KEYRING", raising=False)


def _postgres_available() -> str | None:
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            return None
    except psycopg.OperationalError as exc:
        return f"no PostgreSQL server answers at {PG_ADMIN_URL}: {exc}".splitlines()[0]


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """The admin URL of the test server; skips (or fails in CI) when none answers."""
    problem = _postgres_available()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI: {problem}")
        pytest.skip(problem)
    return PG_ADMIN_URL


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty database for one test; dropped afterwards."""
    name = f"rk_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = postgres_admin_url.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def vectors() -> Path:
    """``tests/vectors``: published vectors and third-party data, each with its attribution.

    ``tlog-vectors/`` and ``xstest/`` are unmodified copies of the published data sets (see each
    directory's attribution).
    """
    return VECTORS


# The fast subset (`python -m pytest -m fast`, CONTRIBUTING.md): each part's core semantics, the
# pinned surfaces and the repository checks, in well under 30 s. No servers, no databases.
FAST = (
    "model/",
    "test_redact.py",
    "test_keyring.py",
    "test_public_api.py",
    "test_repo_hygiene.py",
    "test_doctests.py",
    "decide/test_engine.py",
    "decide/test_pack.py",
    "decide/test_examples.py",
    "journal/test_tree_vectors.py",
    "journal/test_note.py",
    "chat/test_surface.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of the fast subset ``fast``."""
    root = Path(__file__).resolve().parent
    for item in items:
        where = item.path.resolve().relative_to(root).as_posix()
        if where.startswith(FAST):
            item.add_marker(pytest.mark.fast)
